// Package release builds kubectl-apf's release archives reproducibly, renders the
// krew manifest from plugins/krew.yaml, and checks a rendered manifest against
// the rules krew and krew-index apply.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// ArchiveFile is one file to put at the root of a release archive.
type ArchiveFile struct {
	// Name is the path inside the archive ("kubectl-apf", "LICENSE").
	Name string
	// Mode is the permission bits (0o755 for executables, 0o644 otherwise).
	Mode fs.FileMode
	// Body is the content.
	Body []byte
}

// WriteArchive writes files as a gzip-compressed tar to w so that the same input
// always gives the same bytes: entries sorted by name, every header field that
// would otherwise carry the build machine's state (mtime, owner, group, names)
// fixed, USTAR format (no PAX records with sub-second times or atime), and a gzip
// header without file name or mtime (what `gzip -n` does).
func WriteArchive(w io.Writer, files []ArchiveFile, mtime time.Time) error {
	sorted := append([]ArchiveFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i, f := range sorted {
		if err := checkArchiveName(f.Name); err != nil {
			return err
		}
		if i > 0 && sorted[i-1].Name == f.Name {
			return fmt.Errorf("archive entry %q appears twice", f.Name)
		}
		if f.Mode&^fs.ModePerm != 0 {
			return fmt.Errorf("archive entry %q: only permission bits are allowed in its mode, not %v", f.Name, f.Mode)
		}
	}
	// USTAR stores whole seconds; truncating here keeps the header identical
	// whatever precision the caller's time had.
	mtime = mtime.UTC().Truncate(time.Second)

	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("creating gzip writer: %w", err)
	}
	// The zero gzip.Header already has no name and a zero mtime; OS stays
	// "unknown" (255) so the bytes do not depend on the build machine.
	tw := tar.NewWriter(gz)
	for _, f := range sorted {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.Name,
			Size:     int64(len(f.Body)),
			Mode:     int64(f.Mode.Perm()),
			ModTime:  mtime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing tar header of %q: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Body); err != nil {
			return fmt.Errorf("writing %q into the archive: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing tar stream: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("closing gzip stream: %w", err)
	}
	return nil
}

// checkArchiveName rejects names that krew's extractor (internal/download
// extractTARGZ) would place outside the staging directory or that would not be
// one plain file.
func checkArchiveName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("archive entry with an empty name")
	case strings.HasPrefix(name, "/"), path.Clean(name) != name, name == "..", strings.HasPrefix(name, "../"):
		return fmt.Errorf("archive entry %q must be a clean relative path", name)
	case len(name) > 100:
		return fmt.Errorf("archive entry %q is longer than the 100 bytes a USTAR name holds", name)
	}
	return nil
}

// ArchiveEntry is what ReadArchive reports about one entry.
type ArchiveEntry struct {
	Name    string
	Mode    fs.FileMode
	ModTime time.Time
	Uid     int
	Gid     int
	Uname   string
	Gname   string
	Format  tar.Format
	Body    []byte
}

// ReadArchive decodes a .tar.gz made by WriteArchive (or any other) into its
// entries, in archive order. Only regular files are accepted: that is all a
// kubectl-apf archive holds.
func ReadArchive(data []byte) ([]ArchiveEntry, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading gzip header: %w", err)
	}
	tr := tar.NewReader(gz)
	var out []ArchiveEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading tar entry %d: %w", len(out)+1, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("tar entry %q has type %q, want a regular file", hdr.Name, hdr.Typeflag)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading tar entry %q: %w", hdr.Name, err)
		}
		out = append(out, ArchiveEntry{
			Name: hdr.Name, Mode: fs.FileMode(hdr.Mode).Perm(), ModTime: hdr.ModTime,
			Uid: hdr.Uid, Gid: hdr.Gid, Uname: hdr.Uname, Gname: hdr.Gname, Format: hdr.Format, Body: body,
		})
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("closing gzip stream: %w", err)
	}
	return out, nil
}
