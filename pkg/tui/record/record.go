// Package record stores the refreshes of "kubectl apf top" in a file
// (--record) and reads them back (--replay), so a short burst seen live can
// be studied afterwards, frame by frame.
//
// # Format
//
// A recording is JSON Lines, gzip-compressed when the file name ends in
// ".gz". The first line is a Header; every other line is one Frame: the
// time of the refresh, the requests the refresh sent, and the capture as the
// files of a bundle (dump.BundleFiles), so a replayed frame goes through
// exactly the parsers a live capture or a --from bundle goes through
// (dump.CaptureFromFiles), in every dump layout they know.
//
// Each frame is flushed as it is written, so a recording cut short by a
// crash or a closed terminal stays readable: Read keeps the complete frames
// and ignores a truncated last line.
package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// Magic is the Format value of a recording's header line.
const Magic = "kubectl-apf-recording"

// Version is the version of the layout this package writes and reads.
const Version = 1

// maxLine bounds one line (one frame) read back: a recording is untrusted
// input and a garbage file must not exhaust memory. A 10,000-request dump
// with details is about 3 MiB; base64 and JSON add a third.
const maxLine = 256 << 20

// Header is the first line of a recording.
type Header struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Source  string    `json:"source"`
	Started time.Time `json:"started"`
	// Interval is the refresh interval when recording started.
	Interval time.Duration `json:"interval"`
}

// Frame is one refresh.
type Frame struct {
	// At is when the refresh finished (the recorder's clock).
	At time.Time `json:"at"`
	// Requests is how many requests the refresh sent to the apiserver(s);
	// -1 when not counted.
	Requests int64 `json:"requests"`
	// Error is the refresh's error, when it failed (Files is then empty).
	Error string `json:"error,omitempty"`
	// Files is the capture as bundle files (dump.BundleFiles).
	Files map[string][]byte `json:"files,omitempty"`
}

// Capture rebuilds the frame's capture through the bundle reader.
func (f *Frame) Capture() (*dump.Capture, error) {
	if f.Error != "" {
		return nil, errors.New(f.Error)
	}
	c, _, err := dump.CaptureFromFiles(f.Files, dump.CaptureOptions{Parts: dump.PartAll, AllScrapes: true})
	if err != nil {
		return nil, fmt.Errorf("frame at %s: %w", f.At.UTC().Format(time.RFC3339), err)
	}
	return c, nil
}

// NewFrame turns a capture (or the error of a failed refresh) into a frame.
func NewFrame(at time.Time, requests int64, c *dump.Capture, captureErr error) (*Frame, error) {
	f := &Frame{At: at.UTC(), Requests: requests}
	if captureErr != nil {
		f.Error = captureErr.Error()
		return f, nil
	}
	files, err := dump.BundleFiles(c, dump.Manifest{CreatedAt: at.UTC()})
	if err != nil {
		return nil, fmt.Errorf("encoding the frame at %s: %w", at.UTC().Format(time.RFC3339), err)
	}
	f.Files = files
	return f, nil
}

// Writer appends frames to a recording.
type Writer struct {
	f  io.Closer // nil for NewWriter
	gz *gzip.Writer
	bw *bufio.Writer
	// enc writes to gz or bw.
	enc *json.Encoder
}

// Create starts a recording at path (truncating an existing file),
// gzip-compressed when path ends in ".gz".
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the recording: %w", err)
	}
	w, err := newWriter(f, f, strings.HasSuffix(path, ".gz"), h)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the recording %s: %w", path, err)
	}
	return w, nil
}

// NewWriter starts an uncompressed recording on out; Close does not close
// out.
func NewWriter(out io.Writer, h Header) (*Writer, error) {
	return newWriter(out, nil, false, h)
}

func newWriter(out io.Writer, c io.Closer, compress bool, h Header) (*Writer, error) {
	w := &Writer{f: c, bw: bufio.NewWriter(out)}
	var enc io.Writer = w.bw
	if compress {
		w.gz = gzip.NewWriter(w.bw)
		enc = w.gz
	}
	w.enc = json.NewEncoder(enc)
	h.Format, h.Version = Magic, Version
	if err := w.write(h); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) write(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}

// Write appends one frame and flushes it to the file.
func (w *Writer) Write(f *Frame) error {
	if err := w.write(f); err != nil {
		return fmt.Errorf("writing the recording: %w", err)
	}
	return nil
}

// Close finishes the recording.
func (w *Writer) Close() error {
	var errs []error
	if w.gz != nil {
		errs = append(errs, w.gz.Close())
	}
	errs = append(errs, w.bw.Flush())
	if w.f != nil {
		errs = append(errs, w.f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing the recording: %w", err)
	}
	return nil
}

// Recording is a recording read back.
type Recording struct {
	Header Header
	Frames []*Frame
	// Truncated is true when the last line was cut short (and dropped).
	Truncated bool
}

// ReadFile reads the recording at path.
func ReadFile(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the recording: %w", err)
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	return rec, nil
}

// Read parses a recording, gzip-compressed or not (told by its first
// bytes, not its name, so a renamed file still reads).
func Read(r io.Reader) (*Recording, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("not a kubectl-apf recording: %w", err)
		}
		br = bufio.NewReader(gz)
	}
	rec := &Recording{}
	for lineNo := 1; ; lineNo++ {
		line, complete, err := readLine(br)
		if err != nil {
			if rec.Header.Format != "" && isTruncation(err) {
				rec.Truncated = true
				break
			}
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if line == nil {
			break
		}
		if lineNo == 1 {
			if err := json.Unmarshal(line, &rec.Header); err != nil || rec.Header.Format != Magic {
				return nil, fmt.Errorf("not a kubectl-apf recording (the first line is not a %q header); record one with kubectl apf top --record FILE", Magic)
			}
			if rec.Header.Version != Version {
				return nil, fmt.Errorf("recording version %d; this kubectl-apf reads version %d", rec.Header.Version, Version)
			}
			continue
		}
		var f Frame
		if err := json.Unmarshal(line, &f); err != nil {
			if !complete {
				// The recorder was stopped mid-frame.
				rec.Truncated = true
				break
			}
			return nil, fmt.Errorf("line %d: decoding the frame: %w", lineNo, err)
		}
		if f.Error == "" && f.Files == nil {
			return nil, fmt.Errorf("line %d: a frame with neither files nor an error", lineNo)
		}
		rec.Frames = append(rec.Frames, &f)
	}
	if rec.Header.Format == "" {
		return nil, fmt.Errorf("empty file: not a kubectl-apf recording")
	}
	return rec, nil
}

// isTruncation reports an error of a stream cut short (gzip without its
// trailer).
func isTruncation(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// readLine returns the next non-empty line (nil at the end), and whether it
// ended with a newline.
func readLine(br *bufio.Reader) ([]byte, bool, error) {
	for {
		var buf bytes.Buffer
		for {
			chunk, err := br.ReadSlice('\n')
			buf.Write(chunk)
			if buf.Len() > maxLine {
				return nil, false, fmt.Errorf("a line longer than %d bytes", maxLine)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				if buf.Len() == 0 {
					return nil, false, nil
				}
				return buf.Bytes(), false, nil
			}
			return nil, false, err
		}
		line := bytes.TrimSpace(buf.Bytes())
		if len(line) == 0 {
			continue
		}
		return line, true, nil
	}
}
