package vector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Persisted layout shared by both indexes (little-endian throughout):
//
//	magic    [8]byte   "WEFTFLAT" or "WEFTHNSW"
//	version  uint32
//	body     index-specific
//	checksum uint32    CRC-32C (Castagnoli) of every preceding byte
//
// Strings are a uvarint length followed by the bytes. Readers verify the
// checksum before returning anything, so a torn or bit-flipped file is
// reported as ErrCorrupt rather than loaded.

const formatVersion = 1

// Limits that keep a corrupt length field from triggering a huge allocation.
const (
	maxDim       = 1 << 16
	maxStringLen = 1 << 20
	maxMetaPairs = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type encoder struct {
	bw  *bufio.Writer
	crc hash.Hash32
	w   io.Writer
	err error
	buf [binary.MaxVarintLen64]byte
}

func newEncoder(w io.Writer, magic string) *encoder {
	bw := bufio.NewWriterSize(w, 1<<16)
	crc := crc32.New(castagnoli)
	e := &encoder{bw: bw, crc: crc, w: io.MultiWriter(bw, crc)}
	e.bytes([]byte(magic))
	e.u32(formatVersion)
	return e
}

func (e *encoder) bytes(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) uvarint(v uint64) {
	n := binary.PutUvarint(e.buf[:], v)
	e.bytes(e.buf[:n])
}

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

func (e *encoder) meta(m map[string]string) {
	e.uvarint(uint64(len(m)))
	for k, v := range m {
		e.str(k)
		e.str(v)
	}
}

func (e *encoder) f32s(v []float32) {
	var b [4 * 64]byte
	for len(v) > 0 && e.err == nil {
		n := min(len(v), 64)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		e.bytes(b[:4*n])
		v = v[n:]
	}
}

func (e *encoder) u32s(v []uint32) {
	var b [4 * 64]byte
	for len(v) > 0 && e.err == nil {
		n := min(len(v), 64)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		e.bytes(b[:4*n])
		v = v[n:]
	}
}

// finish writes the checksum and flushes.
func (e *encoder) finish() error {
	if e.err != nil {
		return e.err
	}
	binary.LittleEndian.PutUint32(e.buf[:4], e.crc.Sum32())
	if _, err := e.bw.Write(e.buf[:4]); err != nil {
		return err
	}
	return e.bw.Flush()
}

// decoder reads through a checksumming reader; the trailing checksum itself
// is read from the buffered reader underneath so it is not hashed.
type decoder struct {
	br  *bufio.Reader
	crc hash.Hash32
	r   io.Reader
	err error
	buf [8]byte
}

func newDecoder(r io.Reader, magic string) (*decoder, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	crc := crc32.New(castagnoli)
	d := &decoder{br: br, crc: crc, r: io.TeeReader(br, crc)}
	got := make([]byte, len(magic))
	d.read(got)
	if d.err != nil {
		return nil, d.fail()
	}
	if string(got) != magic {
		return nil, fmt.Errorf("%w: not a %s file (magic %q)", ErrCorrupt, magic, got)
	}
	if v := d.u32(); d.err == nil && v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d is not supported (this build reads version %d)", ErrCorrupt, v, formatVersion)
	}
	return d, d.fail()
}

func (d *decoder) read(p []byte) {
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, p)
	}
}

func (d *decoder) u8() uint8 {
	d.read(d.buf[:1])
	return d.buf[0]
}

func (d *decoder) u32() uint32 {
	d.read(d.buf[:4])
	if d.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(d.buf[:4])
}

func (d *decoder) u64() uint64 {
	d.read(d.buf[:8])
	if d.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(d.buf[:8])
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(byteReader{d})
	if err != nil {
		d.err = err
	}
	return v
}

// limit sets a corrupt-data error when v exceeds max.
func (d *decoder) limit(v, max uint64, what string) bool {
	if d.err == nil && v > max {
		d.err = fmt.Errorf("%w: %s %d exceeds limit %d", ErrCorrupt, what, v, max)
	}
	return d.err == nil
}

func (d *decoder) str() string {
	n := d.uvarint()
	if !d.limit(n, maxStringLen, "string length") {
		return ""
	}
	b := make([]byte, n)
	d.read(b)
	return string(b)
}

func (d *decoder) meta() map[string]string {
	n := d.uvarint()
	if !d.limit(n, maxMetaPairs, "metadata size") || n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	return m
}

func (d *decoder) f32s(dst []float32) {
	var b [4 * 64]byte
	for len(dst) > 0 && d.err == nil {
		n := min(len(dst), 64)
		d.read(b[:4*n])
		for i := range dst[:n] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		dst = dst[n:]
	}
}

func (d *decoder) u32s(dst []uint32) {
	var b [4 * 64]byte
	for len(dst) > 0 && d.err == nil {
		n := min(len(dst), 64)
		d.read(b[:4*n])
		for i := range dst[:n] {
			dst[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		dst = dst[n:]
	}
}

// finish verifies the trailing checksum.
func (d *decoder) finish() error {
	if d.err != nil {
		return d.fail()
	}
	want := d.crc.Sum32()
	if _, err := io.ReadFull(d.br, d.buf[:4]); err != nil {
		d.err = err
		return d.fail()
	}
	if got := binary.LittleEndian.Uint32(d.buf[:4]); got != want {
		return fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, got, want)
	}
	return nil
}

// fail maps read errors to ErrCorrupt, keeping the cause.
func (d *decoder) fail() error {
	switch {
	case d.err == nil:
		return nil
	case errors.Is(d.err, ErrCorrupt):
		return d.err
	case errors.Is(d.err, io.EOF), errors.Is(d.err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, d.err)
}

type byteReader struct{ d *decoder }

func (b byteReader) ReadByte() (byte, error) {
	b.d.read(b.d.buf[:1])
	return b.d.buf[0], b.d.err
}

// writeFileAtomic writes path by saving into a temporary file in the same
// directory, syncing it, and renaming it over path, so a crash leaves either
// the old file or the new one, never a torn mix.
func writeFileAtomic(path string, save func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("vector: create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = save(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("vector: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("vector: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("vector: replace %s: %w", path, err)
	}
	// Persist the rename itself; not every filesystem supports syncing a
	// directory, and the data is already safe, so a failure here is ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func openAndLoad[T any](path string, load func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("vector: %w", err)
	}
	defer f.Close()
	v, err := load(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
