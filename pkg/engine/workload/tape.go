package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Tape keeps the requests a reader yielded, in a compact binary form, so
// that later passes over the workload (calibration, and the fixed point of
// an audit-only workload) replay them without reading and parsing the
// input again. Strings that repeat (users, groups, verbs, user agents,
// client addresses, levels, file names) are stored once; audit IDs that are
// UUIDs take 16 bytes. A request takes about 60 bytes plus its path. The
// tables of strings and group lists hold at most 65,536 entries each: past
// that, new values are stored in the record itself, so that values that do
// not repeat (client ports, in a long log) do not make them grow with the
// input.
//
// The first MemoryLimit bytes stay in memory (about 75,000 requests by
// default); the rest go to a temporary file, so that memory does not grow
// with the input.
type Tape struct {
	// MemoryLimit is how many bytes of records are kept in memory before
	// the tape spills to a temporary file (default 8 MiB).
	MemoryLimit int
	// Dir is where the temporary file goes (default os.TempDir()).
	Dir string

	mem      [][]byte // chunks of tapeChunk bytes
	memBytes int
	spill    *os.File
	spillW   *bufio.Writer
	spilled  int64
	n        int64
	strs     map[string]uint64
	strTab   []string
	lists    map[string]uint64
	listPtrs map[listPtr]uint64
	listTab  [][]string
	locs     map[*time.Location]uint64
	locTab   []*time.Location
	scratch  []byte
	err      error
	recorded bool
	// maxTable bounds the string and list tables (default tableLimit)
	maxTable int
	// recent caches the ids of the strings last appended, by slot
	recent [256]recentStr
	// ahead are the readers of ReaderAhead, stopped by Close
	ahead []*Prefetched
}

type recentStr struct {
	s  string
	id uint64
	ok bool
}

// slotString is slot of a string.
func slotString(s string) int {
	if len(s) == 0 {
		return 0
	}
	return (len(s)*31 + int(s[0])*7 + int(s[len(s)-1])*3 + int(s[len(s)/2])) & 255
}

// NewTape returns an empty tape.
func NewTape() *Tape {
	return &Tape{strs: map[string]uint64{}, lists: map[string]uint64{}, listPtrs: map[listPtr]uint64{}, locs: map[*time.Location]uint64{}}
}

// Len returns how many requests the tape holds.
func (t *Tape) Len() int64 { return t.n }

// Bytes returns the size of the records (in memory and spilled).
func (t *Tape) Bytes() int64 { return int64(t.memBytes) + t.spilled }

// tapeChunk is the size of the tape's chunks of memory: the tape grows by
// chunks, not by copying what it holds.
const tapeChunk = 1 << 20

// Close stops the goroutines of ReaderAhead and removes the temporary
// file, if any.
func (t *Tape) Close() error {
	for _, p := range t.ahead {
		p.Close()
	}
	t.ahead = nil
	if t.spill == nil {
		return nil
	}
	name := t.spill.Name()
	err := t.spill.Close()
	t.spill = nil
	return errors.Join(err, os.Remove(name))
}

// Record returns a reader that yields src's requests and keeps each on the
// tape. A tape records one reader, once.
func (t *Tape) Record(src Reader) Reader {
	if t.recorded {
		return errReader{errors.New("the tape has already recorded a workload")}
	}
	t.recorded = true
	return &taping{t: t, src: src}
}

type errReader struct{ err error }

func (e errReader) Next(*Request) error { return e.err }

type taping struct {
	t   *Tape
	src Reader
}

func (tp *taping) Next(r *Request) error {
	if err := tp.src.Next(r); err != nil {
		return err
	}
	return tp.t.append(r)
}

// Reader returns a reader of the requests on the tape, from the first.
// Several readers may read the tape, one after the other or at once, once
// its recording has ended.
func (t *Tape) Reader() Reader {
	if t.err != nil {
		return errReader{t.err}
	}
	srcs := make([]io.Reader, 0, len(t.mem)+1)
	for _, c := range t.mem {
		srcs = append(srcs, bytes.NewReader(c))
	}
	if t.spill != nil {
		if err := t.spillW.Flush(); err != nil {
			return errReader{fmt.Errorf("writing the workload's temporary copy: %w", err)}
		}
		srcs = append(srcs, io.NewSectionReader(t.spill, 0, t.spilled))
	}
	src := io.MultiReader(srcs...)
	return &tapeReader{t: t, left: t.n, dec: decoder{br: bufio.NewReaderSize(src, 1<<16)}}
}

// ReaderAhead is Reader, decoding the records in a goroutine of its own,
// batches ahead of the caller: a pass over the tape then decodes on
// another core than the one that uses the requests. It yields the same
// requests, in the same order, with the same error at the end. A reader
// left before its end holds its goroutine until the tape is closed.
func (t *Tape) ReaderAhead() Reader {
	r := t.Reader()
	if _, ok := r.(*tapeReader); !ok {
		return r
	}
	p := Prefetch(r)
	t.ahead = append(t.ahead, p)
	return p
}

// The flags of a record.
const (
	tUserKnown = 1 << iota
	tHasServiceTime
	tHasSeats
	tHasQueueWait
	tHasLatencyAnnotations
	tGroupsNil
	tUUID
	tSourceNumbered
	tHasAuditLatency
)

func (t *Tape) append(r *Request) error {
	if t.err != nil {
		return t.err
	}
	b := t.scratch[:0]
	var flags uint64
	for _, f := range []struct {
		on  bool
		bit uint64
	}{{r.UserKnown, tUserKnown}, {r.HasServiceTime, tHasServiceTime}, {r.HasSeats, tHasSeats}, {r.HasQueueWait, tHasQueueWait},
		{r.HasLatencyAnnotations, tHasLatencyAnnotations}, {r.Groups == nil, tGroupsNil}, {r.HasAuditLatency, tHasAuditLatency}} {
		if f.on {
			flags |= f.bit
		}
	}
	uuid, isUUID := packUUID(r.AuditID)
	if isUUID {
		flags |= tUUID
	}
	numbered := r.Source.Line > 0
	if numbered {
		flags |= tSourceNumbered
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendVarint(b, r.Arrival.Unix())
	b = binary.AppendUvarint(b, uint64(r.Arrival.Nanosecond()))
	b = binary.AppendUvarint(b, t.loc(r.Arrival.Location()))
	if isUUID {
		b = append(b, uuid[:]...)
	} else {
		b = appendString(b, r.AuditID)
	}
	for _, s := range []string{r.User, r.Method, r.Verb, r.UserAgent, r.SourceIP, r.FlowSchema, r.PriorityLevel, r.Instance} {
		b = t.appendStr(b, s)
	}
	b = t.appendList(b, r.Groups)
	b = appendString(b, r.URI)
	if numbered {
		b = t.appendStr(b, r.Source.Name)
		b = binary.AppendUvarint(b, uint64(r.Source.Line))
	} else {
		b = appendString(b, r.Source.Name)
	}
	for _, d := range []time.Duration{r.Latency, r.ServiceTime, r.AdditionalLatency, r.QueueWait, r.PreAPF, r.TotalLatency, r.QueuedOverhead} {
		b = binary.AppendVarint(b, int64(d))
	}
	b = binary.AppendUvarint(b, r.InitialSeats)
	b = binary.AppendUvarint(b, r.FinalSeats)
	b = binary.AppendVarint(b, int64(r.Status))
	if r.HasAuditLatency {
		b = binary.AppendVarint(b, int64(r.AuditLatency))
	}
	t.scratch = b
	t.n++
	limit := t.MemoryLimit
	if limit <= 0 {
		limit = 8 << 20
	}
	if t.spill == nil && t.memBytes+len(b) <= limit {
		if n := len(t.mem); n == 0 || len(t.mem[n-1])+len(b) > cap(t.mem[n-1]) {
			t.mem = append(t.mem, make([]byte, 0, max(tapeChunk, len(b))))
		}
		c := &t.mem[len(t.mem)-1]
		*c = append(*c, b...)
		t.memBytes += len(b)
		return nil
	}
	if t.spill == nil {
		f, err := os.CreateTemp(t.Dir, "kubectl-apf-workload-*")
		if err != nil {
			t.err = fmt.Errorf("creating the workload's temporary copy: %w", err)
			return t.err
		}
		t.spill, t.spillW = f, bufio.NewWriterSize(f, 1<<20)
	}
	if _, err := t.spillW.Write(b); err != nil {
		t.err = fmt.Errorf("writing the workload's temporary copy: %w", err)
		return t.err
	}
	t.spilled += int64(len(b))
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// tableID returns the id of key in a table of values, adding v while the
// table holds fewer than limit; ok is false when it is full without key.
func tableID[K comparable, V any](ids map[K]uint64, tab *[]V, key K, v V, limit int) (id uint64, ok bool) {
	if id, ok := ids[key]; ok {
		return id, true
	}
	if len(*tab) >= limit {
		return 0, false
	}
	id = uint64(len(*tab))
	ids[key] = id
	*tab = append(*tab, v)
	return id, true
}

func (t *Tape) tableLimit() int {
	if t.maxTable > 0 {
		return t.maxTable
	}
	return tableLimit
}

// appendStr appends s as 1 + its id in the string table, or, when the
// table is full, as 0 and s itself.
func (t *Tape) appendStr(b []byte, s string) []byte {
	// most strings are the few that every record repeats, interned by
	// their reader: a comparison with the last one of their slot (equal
	// pointers compare at once) costs less than the table's hash
	c := &t.recent[slotString(s)]
	if c.ok && c.s == s {
		return binary.AppendUvarint(b, c.id+1)
	}
	if id, ok := tableID(t.strs, &t.strTab, s, s, t.tableLimit()); ok {
		*c = recentStr{s, id, true}
		return binary.AppendUvarint(b, id+1)
	}
	return appendString(append(b, 0), s)
}

// appendList appends l as 1 + its id in the list table, or, when the table
// is full, as 0, its length and its strings.
func (t *Tape) appendList(b []byte, l []string) []byte {
	if id, ok := t.list(l); ok {
		return binary.AppendUvarint(b, id+1)
	}
	b = binary.AppendUvarint(append(b, 0), uint64(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

func (t *Tape) list(l []string) (uint64, bool) {
	// the readers intern their group lists: the same backing array is
	// the same list
	var pk listPtr
	if len(l) > 0 {
		pk = listPtr{&l[0], len(l)}
		if id, ok := t.listPtrs[pk]; ok {
			return id, true
		}
	}
	id, ok := t.listByValue(l)
	if ok && len(l) > 0 && len(t.listPtrs) < tableLimit {
		t.listPtrs[pk] = id
	}
	return id, ok
}

type listPtr struct {
	first *string
	n     int
}

func (t *Tape) listByValue(l []string) (uint64, bool) {
	return tableID(t.lists, &t.listTab, strings.Join(l, "\x00")+"\x00"+strconv.Itoa(len(l)), l, t.tableLimit())
}

// loc returns the id of a location: a workload's arrivals have one or two.
func (t *Tape) loc(l *time.Location) uint64 {
	id, _ := tableID(t.locs, &t.locTab, l, l, math.MaxInt)
	return id
}

// packUUID packs a lowercase canonical UUID into 16 bytes.
func packUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	// a byte that is not a lowercase hex digit has the high bits of its
	// value set: one test for all
	var all byte
	for j, i := range uuidPairs {
		hi, lo := hexValue[s[i]], hexValue[s[i+1]]
		all |= hi | lo
		u[j] = hi<<4 | lo
	}
	return u, all < 16
}

// uuidPairs are where the 16 bytes of a canonical UUID stand in it.
var uuidPairs = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexValue is the value of a lowercase hex digit, 0xff for any other byte.
var hexValue = func() (t [256]byte) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = byte(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()

// appendUUID appends the canonical form of the packed UUID u to b.
func appendUUID(b, u []byte) []byte {
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return append(b, s[:]...)
}

type tapeReader struct {
	t    *Tape
	left int64
	dec  decoder
}

var errTape = errors.New("the workload's temporary copy is corrupt")

func (tr *tapeReader) Next(r *Request) error {
	if tr.left == 0 {
		return io.EOF
	}
	tr.left--
	if err := tr.decode(r); err != nil {
		return fmt.Errorf("reading the workload's temporary copy: %w", err)
	}
	return nil
}

func (tr *tapeReader) decode(r *Request) error {
	t, d := tr.t, &tr.dec
	*r = Request{}
	flags := d.uv()
	sec, nsec, loc := d.sv(), d.uv(), d.uv()
	if d.err != nil || loc >= uint64(len(t.locTab)) || nsec >= 1e9 {
		return d.fail()
	}
	r.Arrival = time.Unix(sec, int64(nsec)).In(t.locTab[loc])
	// the audit ID waits for the URI, to make one string of the two
	// (twoStrings), as the httplog reader does
	id := d.scratch[:0]
	if flags&tUUID != 0 {
		if b := d.bytes(16); d.err == nil {
			id = appendUUID(id, b)
		}
	} else if n := d.uv(); n > 0 {
		id = append(id, d.bytes(n)...)
	}
	d.scratch = id
	for _, p := range []*string{&r.User, &r.Method, &r.Verb, &r.UserAgent, &r.SourceIP, &r.FlowSchema, &r.PriorityLevel, &r.Instance} {
		*p = d.tab(t.strTab)
	}
	if groups := d.list(t.listTab); flags&tGroupsNil == 0 {
		r.Groups = groups
	}
	r.URI, r.AuditID = twoStrings(&d.both, d.bytes(d.uv()), id)
	if flags&tSourceNumbered != 0 {
		name := d.tab(t.strTab)
		if line := d.uv(); line > 0 && line <= math.MaxInt64 {
			r.Source = Where{name, int64(line)}
		} else {
			return d.fail()
		}
	} else {
		r.Source = At(d.str())
	}
	for _, p := range []*time.Duration{&r.Latency, &r.ServiceTime, &r.AdditionalLatency, &r.QueueWait, &r.PreAPF, &r.TotalLatency, &r.QueuedOverhead} {
		*p = time.Duration(d.sv())
	}
	r.InitialSeats, r.FinalSeats = d.uv(), d.uv()
	r.Status = int(d.sv())
	r.AuditLatency, r.HasAuditLatency = 0, flags&tHasAuditLatency != 0
	if r.HasAuditLatency {
		r.AuditLatency = time.Duration(d.sv())
	}
	r.UserKnown = flags&tUserKnown != 0
	r.HasServiceTime = flags&tHasServiceTime != 0
	r.HasSeats = flags&tHasSeats != 0
	r.HasQueueWait = flags&tHasQueueWait != 0
	r.HasLatencyAnnotations = flags&tHasLatencyAnnotations != 0
	if d.err != nil {
		return d.fail()
	}
	return nil
}

// decoder reads the fields of a record; after the first error it returns
// zero values and keeps the error.
type decoder struct {
	br      *bufio.Reader
	err     error
	buf     []byte
	scratch []byte
	both    []byte // a request's URI and audit ID, before they are one string
}

func (d *decoder) fail() error {
	if d.err == nil || errors.Is(d.err, io.EOF) || errors.Is(d.err, io.ErrUnexpectedEOF) {
		return errTape
	}
	return d.err
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.br)
	d.err = err
	return v
}

func (d *decoder) sv() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.br)
	d.err = err
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > 1<<30 {
		d.err = errTape
		return nil
	}
	if uint64(cap(d.buf)) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	_, d.err = io.ReadFull(d.br, b)
	return b
}

func (d *decoder) str() string {
	n := d.uv()
	if n == 0 {
		return ""
	}
	return string(d.bytes(n))
}

// tab reads what Tape.appendStr wrote.
func (d *decoder) tab(tab []string) string {
	id := d.uv()
	if d.err != nil {
		return ""
	}
	if id == 0 {
		return d.str()
	}
	if id > uint64(len(tab)) {
		d.err = errTape
		return ""
	}
	return tab[id-1]
}

// list reads what Tape.appendList wrote.
func (d *decoder) list(tab [][]string) []string {
	id := d.uv()
	if d.err != nil {
		return nil
	}
	if id > uint64(len(tab)) {
		d.err = errTape
		return nil
	}
	if id > 0 {
		return tab[id-1]
	}
	n := d.uv()
	if d.err != nil || n > 1<<20 {
		d.err = cmp.Or(d.err, errTape)
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = d.str()
	}
	return l
}

// tableLimit is the default bound of a tape's string and list tables, the
// bound of the readers' interners (package input).
const tableLimit = 1 << 16
