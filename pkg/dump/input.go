package dump

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// StdinPath is the --from argument that reads standard input.
const StdinPath = "-"

// gzipMagic starts every gzip stream, hence every bundle tarball.
var gzipMagic = []byte{0x1f, 0x8b}

// input is what --from named, read once: bundle files or a raw input.
type input struct {
	// bundle holds a bundle's files, and manifest its manifest; nil for a
	// raw input.
	bundle   *bundleFiles
	manifest *Manifest
	raw      *RawInput
	// name is how messages name the input; at is the time of a raw
	// snapshot (zero: unknown).
	name string
	at   time.Time
	// atFrom says where at comes from (Snapshot.CapturedAtFrom).
	atFrom string
}

// readInput reads what --from names: a bundle (a directory with
// bundle.json, or a .tar.gz), a raw dump or metrics file, a directory of
// such files, or "-" for stdin (a tarball or raw text). The kind is told by
// the content, never by the name.
func readInput(path string, stdin io.Reader, objects ObjectReader) (*input, error) {
	if path == StdinPath {
		if stdin == nil {
			stdin = os.Stdin
		}
		data, err := io.ReadAll(io.LimitReader(stdin, maxBundleFile+1))
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		if len(data) > maxBundleFile {
			return nil, fmt.Errorf("standard input is larger than %d bytes", maxBundleFile)
		}
		return inputFromBytes("standard input", data, time.Time{})
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading --from: %w", err)
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, manifestFile)); err == nil {
			files, err := readBundleDir(path)
			if err != nil {
				return nil, err
			}
			return bundleInput(files, "bundle "+path)
		}
		return rawDir(path, objects)
	}
	if gz, err := startsWith(path, gzipMagic); err != nil {
		return nil, fmt.Errorf("reading --from: %w", err)
	} else if gz {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading --from: %w", err)
		}
		defer f.Close()
		tarball, data, err := gunzipped(f, path)
		if !tarball {
			// a raw dump or /metrics text gzipped to keep or share
			return rawFromGzip(path, data, err, st.ModTime())
		}
		// a tarball of any size: its scrapes are read when asked for
		files, err := readBundleTarball(path)
		if err != nil {
			return nil, err
		}
		return bundleInput(files, "bundle "+path)
	}
	if st.Size() > maxBundleFile {
		return nil, fmt.Errorf("reading --from %s: larger than %d bytes", path, maxBundleFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --from: %w", err)
	}
	return inputFromBytes(path, data, st.ModTime())
}

// bundleInput is the input of a bundle's files, named name, with its
// manifest.
func bundleInput(files *bundleFiles, name string) (*input, error) {
	m, err := readManifest(files.held)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &input{bundle: files, manifest: m, name: name}, nil
}

// startsWith reports whether the file p begins with prefix.
func startsWith(p string, prefix []byte) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	b := make([]byte, len(prefix))
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(b[:n], prefix), nil
}

// inputFromBytes reads a tarball or raw text held in memory, the raw
// text gzipped or not.
func inputFromBytes(name string, data []byte, mtime time.Time) (*input, error) {
	if bytes.HasPrefix(data, gzipMagic) {
		tarball, text, err := gunzipped(bytes.NewReader(data), name)
		if !tarball {
			return rawFromGzip(name, text, err, mtime)
		}
		files, err := readTarball(name, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return bundleInput(&bundleFiles{held: files}, "bundle on "+name)
	}
	return rawFromBytes(name, data, mtime)
}

// tarMagic is at tarMagicAt in the first header of every tar archive Go
// or GNU tar writes (ustar, PAX and GNU formats alike).
var (
	tarMagic   = []byte("ustar")
	tarMagicAt = 257
)

// gunzipped reads the gzip stream r, named name: whether it holds a tar
// archive (a bundle, told by its first header), and else the text it
// holds, up to maxBundleFile bytes.
func gunzipped(r io.Reader, name string) (tarball bool, text []byte, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return false, nil, fmt.Errorf("reading --from %s: gzip: %w", name, err)
	}
	head := make([]byte, tarMagicAt+len(tarMagic))
	n, err := io.ReadFull(zr, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, nil, fmt.Errorf("reading --from %s: gzip: %w", name, err)
	}
	if n == len(head) && bytes.Equal(head[tarMagicAt:], tarMagic) {
		return true, nil, nil
	}
	rest, err := io.ReadAll(io.LimitReader(zr, maxBundleFile+1-int64(n)))
	text = append(head[:n], rest...)
	if errors.Is(err, io.ErrUnexpectedEOF) && len(text) > 0 {
		// a file cut short (a copy that stopped): the text before the
		// cut's line is read as a raw input is, a partial answer that
		// says so (the line the cut went through is not read)
		return false, text[:bytes.LastIndexByte(text, '\n')+1], errCutShort
	}
	if err != nil {
		return false, nil, fmt.Errorf("reading --from %s: gzip: %w", name, err)
	}
	if len(text) > maxBundleFile {
		return false, nil, fmt.Errorf("reading --from %s: larger than %d bytes once unzipped", name, maxBundleFile)
	}
	return false, text, nil
}

// errCutShort is gunzipped's error for a gzip stream that ends before its
// end: the text before the cut's line is returned with it.
var errCutShort = errors.New("its gzip stream ends before its end: cut short")

// rawFromGzip reads the raw text a gzip stream held, cut short or not.
func rawFromGzip(name string, text []byte, err error, mtime time.Time) (*input, error) {
	if errors.Is(err, errCutShort) {
		name = fmt.Sprintf("%s (cut short: the %d bytes before the cut's line read)", name, len(text))
	} else if err != nil {
		return nil, err
	}
	return rawFromBytes(name, text, mtime)
}

// rawFromBytes reads raw text held in memory: debug dumps, /metrics text.
func rawFromBytes(name string, data []byte, mtime time.Time) (*input, error) {
	raw := &RawInput{}
	if err := DetectRaw(name, data, raw); err != nil {
		return nil, err
	}
	at, from := rawTime(raw, mtime)
	return &input{raw: raw, name: name, at: at, atFrom: from}, nil
}

// rawTime is when a raw input was captured: the newest time its request
// dump shows (requests arrive before the dump is taken), else the file's
// modification time, else unknown; and where that time comes from.
func rawTime(raw *RawInput, mtime time.Time) (time.Time, string) {
	if !raw.Newest.IsZero() {
		return raw.Newest.UTC(), AtNewestRequest
	}
	if mtime.IsZero() {
		return time.Time{}, ""
	}
	return mtime.UTC(), AtFileTime
}

// Where the capture time of a raw input comes from (Snapshot.CapturedAtFrom).
const (
	// AtNewestRequest: the newest arrival or start its dump_requests
	// shows, no later than the dump: ages counted from it are at least
	// what they were.
	AtNewestRequest = "the newest arrival or start in its dump_requests"
	// AtFileTime: when its file was last written (the newest, for a
	// directory), no earlier than the dump: ages counted from it are at
	// most what they were.
	AtFileTime = "the time its file was last written"
)

// ObjectReader reads the FlowSchemas and PriorityLevelConfigurations of a
// file named name, converted to v1; none and no error when it holds none.
type ObjectReader func(name string, data []byte) ([]flowcontrolv1.FlowSchema, []flowcontrolv1.PriorityLevelConfiguration, error)

// rawDir reads the files of a directory that is not a bundle, each told by
// its content: dumps and metrics, and with objects the FlowSchemas and
// PriorityLevelConfigurations of YAML or JSON files; files that are none of
// these are listed in the note.
func rawDir(dir string, objects ObjectReader) (*input, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading --from: %w", err)
	}
	raw := &RawInput{}
	var newest time.Time
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading --from: %w", err)
		}
		if info.Size() > maxBundleFile {
			raw.Ignored = append(raw.Ignored, n+" (too large)")
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading --from: %w", err)
		}
		if bytes.HasPrefix(data, gzipMagic) {
			// a dump or metrics gzipped: the text it holds (a tarball
			// or no gzip at all is not raw text, as before)
			if tarball, text, err := gunzipped(bytes.NewReader(data), p); !tarball && (err == nil || errors.Is(err, errCutShort)) {
				data = text
				if err != nil {
					raw.Ignored = append(raw.Ignored, "the end of "+n+" (its gzip stream is cut short)")
				}
			}
		}
		// A file that is not raw text is not part of the input; one that
		// is, but is broken, is an error.
		var one RawInput
		if err := DetectRaw(p, data, &one); err != nil {
			if looksRaw(data) {
				return nil, err
			}
			raw.addObjects(objects, n, p, data)
			continue
		}
		if err := DetectRaw(p, data, raw); err != nil {
			return nil, err
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	if len(raw.Files) == 0 || !raw.hasLive() {
		return nil, fmt.Errorf("reading --from %s: not a kubectl-apf bundle (no %s) and no file in it is a debug dump or /metrics text", dir, manifestFile)
	}
	if err := raw.encodeObjects(); err != nil {
		return nil, err
	}
	at, from := rawTime(raw, newest)
	return &input{raw: raw, name: dir, at: at, atFrom: from}, nil
}

// looksRaw reports whether a file of a directory means to be a dump or
// metrics: its first line that is not blank is a dump header or a metrics
// line.
func looksRaw(data []byte) bool {
	for _, l := range bytes.Split(data, []byte("\n")) {
		t := string(bytes.TrimSpace(l))
		if t == "" || isElision(t) || promptRE.MatchString(t) || strings.HasPrefix(t, "```") {
			continue
		}
		if kind, _ := dumpKindOf(t); kind == "" && !isMetricsLine(t) && isProse(t, false) {
			continue
		}
		kind, err := dumpKindOf(t)
		return kind != "" || err != nil || isMetricsLine(t)
	}
	return false
}

// capture returns the raw input as a one-snapshot capture, with the parts
// of opts.
func (in *input) captureRaw(opts CaptureOptions) (*Capture, error) {
	kept := &RawInput{Files: map[string][]byte{}}
	for k, b := range in.raw.Files {
		if wanted(k, opts.Parts) {
			kept.Files[k] = b
		}
	}
	s, err := kept.Snapshot(in.name, in.at)
	if err != nil {
		return nil, err
	}
	s.CapturedAtFrom = in.atFrom
	return &Capture{Snapshots: []*Snapshot{s}, Notes: []string{in.raw.Note(in.name)}}, nil
}

// objectExts are the extensions of the files rawDir reads objects from.
var objectExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// addObjects reads the objects of a file of a raw directory that is no
// dump or metrics. A file that holds none is left to the note's ignored
// files, with why.
func (in *RawInput) addObjects(read ObjectReader, base, p string, data []byte) {
	ignore := func(why string) { in.Ignored = append(in.Ignored, fmt.Sprintf("%s (%s)", base, why)) }
	// x.yaml.gz is a .yaml file gzipped: rawDir read the text it holds
	if !objectExts[strings.ToLower(filepath.Ext(strings.TrimSuffix(base, ".gz")))] {
		ignore("neither a debug dump, /metrics text, nor a .yaml, .yml or .json file of objects")
		return
	}
	if read == nil {
		ignore("this command reads no objects")
		return
	}
	fs, pl, err := read(p, data)
	if err != nil {
		ignore(err.Error())
		return
	}
	if len(fs)+len(pl) == 0 {
		ignore("no FlowSchema or PriorityLevelConfiguration in it")
		return
	}
	in.flowSchemas = append(in.flowSchemas, fs...)
	in.priorityLevels = append(in.priorityLevels, pl...)
	in.objectFiles = append(in.objectFiles, base)
}

// hasLive reports whether the input holds a dump or metrics, not objects
// alone.
func (in *RawInput) hasLive() bool {
	for _, k := range rawKinds {
		if _, ok := in.Files[k]; ok {
			return true
		}
	}
	return false
}

// encodeObjects keeps the objects read as a bundle keeps them: v1 lists.
func (in *RawInput) encodeObjects() error {
	if len(in.flowSchemas) > 0 {
		b, err := json.Marshal(flowcontrolv1.FlowSchemaList{TypeMeta: typeMetaList("FlowSchemaList"), Items: in.flowSchemas})
		if err != nil {
			return err
		}
		in.Files[FileFlowSchemas] = b
	}
	if len(in.priorityLevels) > 0 {
		b, err := json.Marshal(flowcontrolv1.PriorityLevelConfigurationList{TypeMeta: typeMetaList("PriorityLevelConfigurationList"), Items: in.priorityLevels})
		if err != nil {
			return err
		}
		in.Files[FilePLCs] = b
	}
	return nil
}
