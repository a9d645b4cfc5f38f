package release

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

var testMTime = time.Date(2026, 11, 21, 14, 44, 0, 0, time.UTC)

func testFiles() []ArchiveFile {
	return []ArchiveFile{
		{Name: "kubectl_complete-apf", Mode: 0o755, Body: []byte("#!/bin/sh\n")},
		{Name: "LICENSE", Mode: 0o644, Body: []byte("licence text\n")},
		{Name: "kubectl-apf", Mode: 0o755, Body: bytes.Repeat([]byte{0x7f, 'E', 'L', 'F'}, 1000)},
	}
}

func TestWriteArchiveIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	if err := WriteArchive(&a, testFiles(), testMTime); err != nil {
		t.Fatal(err)
	}
	// The same files in another order and the same instant in another zone
	// with sub-second noise must give the same bytes.
	files := testFiles()
	files[0], files[2] = files[2], files[0]
	other := testMTime.In(time.FixedZone("X", 5*3600)).Add(400 * time.Millisecond)
	if err := WriteArchive(&b, files, other); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("same files gave different archives: %x vs %x", sha256.Sum256(a.Bytes()), sha256.Sum256(b.Bytes()))
	}
	// A different mtime must change the bytes, or the mtime would not be in
	// the archive at all.
	var c bytes.Buffer
	if err := WriteArchive(&c, testFiles(), testMTime.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("a different mtime gave the same archive")
	}
}

func TestWriteArchiveHeaders(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteArchive(&buf, testFiles(), testMTime); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	// gzip header (RFC 1952): no FNAME flag, MTIME zero, OS unknown.
	if raw[0] != 0x1f || raw[1] != 0x8b {
		t.Fatalf("not gzip: % x", raw[:2])
	}
	if flg := raw[3]; flg&0x08 != 0 {
		t.Errorf("gzip header carries a file name (FLG=%#x)", flg)
	}
	if mtime := raw[4:8]; !bytes.Equal(mtime, []byte{0, 0, 0, 0}) {
		t.Errorf("gzip header MTIME = % x, want zero", mtime)
	}

	entries, err := ReadArchive(raw)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
		if !e.ModTime.Equal(testMTime) {
			t.Errorf("%s: mtime %v, want %v", e.Name, e.ModTime, testMTime)
		}
		if e.Uid != 0 || e.Gid != 0 || e.Uname != "" || e.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 and no names", e.Name, e.Uid, e.Gid, e.Uname, e.Gname)
		}
		if e.Format != tar.FormatUSTAR {
			t.Errorf("%s: format %v, want USTAR", e.Name, e.Format)
		}
	}
	if got, want := strings.Join(names, ","), "LICENSE,kubectl-apf,kubectl_complete-apf"; got != want {
		t.Errorf("entries %s, want sorted %s", got, want)
	}
	modes := map[string]string{}
	for _, e := range entries {
		modes[e.Name] = e.Mode.String()
	}
	if modes["kubectl-apf"] != "-rwxr-xr-x" || modes["LICENSE"] != "-rw-r--r--" {
		t.Errorf("modes %v", modes)
	}
	for _, f := range testFiles() {
		for _, e := range entries {
			if e.Name == f.Name && !bytes.Equal(e.Body, f.Body) {
				t.Errorf("%s: body changed in the round trip", f.Name)
			}
		}
	}
}

func TestWriteArchiveRejects(t *testing.T) {
	tests := []struct {
		name    string
		files   []ArchiveFile
		wantErr string
	}{
		{"empty name", []ArchiveFile{{Name: "", Mode: 0o644}}, "empty name"},
		{"absolute", []ArchiveFile{{Name: "/etc/passwd", Mode: 0o644}}, "clean relative path"},
		{"parent", []ArchiveFile{{Name: "../x", Mode: 0o644}}, "clean relative path"},
		{"unclean", []ArchiveFile{{Name: "a//b", Mode: 0o644}}, "clean relative path"},
		{"twice", []ArchiveFile{{Name: "a", Mode: 0o644}, {Name: "a", Mode: 0o644}}, "appears twice"},
		{"setuid", []ArchiveFile{{Name: "a", Mode: 0o4755}}, "only permission bits"},
		{"too long", []ArchiveFile{{Name: strings.Repeat("x", 101), Mode: 0o644}}, "100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteArchive(&bytes.Buffer{}, tt.files, testMTime)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadArchiveRejectsGarbage(t *testing.T) {
	if _, err := ReadArchive([]byte("not gzip")); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("err = %v, want a gzip error", err)
	}
}
