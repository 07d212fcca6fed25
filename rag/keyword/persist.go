package keyword

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

// Persisted layout (little-endian; uv = uvarint):
//
//	magic "WEFTBM25", version uint32, k1 float32, b float32
//	docs uv, then per live document: id, metadata (uv pairs of strings), length uv
//	terms uv, then per term: text, postings uv, then (doc delta uv, tf uv)…
//	CRC-32C (Castagnoli) of every preceding byte, uint32
//
// Strings are uv length + bytes. Tombstones are not written: documents are
// renumbered densely on save.
const (
	magic         = "WEFTBM25"
	formatVersion = 1
	maxStringLen  = 1 << 20
	maxMetaPairs  = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type writer struct {
	bw  *bufio.Writer
	crc hash.Hash32
	err error
	buf []byte
}

func (w *writer) raw(p []byte) {
	if w.err == nil {
		w.crc.Write(p)
		_, w.err = w.bw.Write(p)
	}
}

func (w *writer) uv(v uint64) { w.buf = binary.AppendUvarint(w.buf[:0], v); w.raw(w.buf) }

func (w *writer) u32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf[:0], v); w.raw(w.buf) }

func (w *writer) str(s string) {
	w.uv(uint64(len(s)))
	w.raw([]byte(s))
}

// Save writes the index to w (see the package's format description). It
// holds a read lock, so searches continue meanwhile.
func (ix *Index) Save(out io.Writer) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	w := &writer{bw: bufio.NewWriterSize(out, 1<<16), crc: crc32.New(castagnoli)}
	w.raw([]byte(magic))
	w.u32(formatVersion)
	w.u32(math.Float32bits(ix.k1))
	w.u32(math.Float32bits(ix.b))
	remap := make([]uint32, len(ix.ids))
	w.uv(uint64(ix.live))
	var next uint32
	for n, id := range ix.ids {
		if ix.dead[n] {
			continue
		}
		remap[n] = next
		next++
		w.str(id)
		w.uv(uint64(len(ix.metas[n])))
		for k, v := range ix.metas[n] {
			w.str(k)
			w.str(v)
		}
		w.uv(uint64(ix.lens[n]))
	}
	var terms uint64
	for t := range ix.postings {
		if ix.df[t] > 0 {
			terms++
		}
	}
	w.uv(terms)
	for term, t := range ix.terms {
		if ix.df[t] == 0 {
			continue
		}
		w.str(term)
		w.uv(uint64(ix.df[t]))
		var prev uint32
		for _, p := range ix.postings[t] {
			if ix.dead[p.doc] {
				continue
			}
			d := remap[p.doc]
			w.uv(uint64(d - prev))
			w.uv(uint64(p.tf))
			prev = d
		}
	}
	if w.err == nil {
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], w.crc.Sum32())
		_, w.err = w.bw.Write(sum[:])
	}
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err != nil {
		return fmt.Errorf("keyword: save index: %w", w.err)
	}
	return nil
}

type reader struct {
	br  *bufio.Reader
	crc hash.Hash32
	err error
}

func (r *reader) ReadByte() (byte, error) {
	if r.err != nil {
		return 0, r.err
	}
	c, err := r.br.ReadByte()
	if err != nil {
		r.err = err
		return 0, err
	}
	r.crc.Write([]byte{c})
	return c, nil
}

func (r *reader) full(p []byte) {
	if r.err == nil {
		_, r.err = io.ReadFull(r.br, p)
		r.crc.Write(p)
	}
}

func (r *reader) uv(limit uint64, what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r)
	if err != nil {
		r.err = err
		return 0
	}
	if v > limit {
		r.err = fmt.Errorf("%w: %s %d exceeds %d", ErrCorrupt, what, v, limit)
		return 0
	}
	return v
}

func (r *reader) u32() uint32 {
	var b [4]byte
	r.full(b[:])
	return binary.LittleEndian.Uint32(b[:])
}

func (r *reader) str() string {
	n := r.uv(maxStringLen, "string length")
	if r.err != nil {
		return ""
	}
	b := make([]byte, n)
	r.full(b)
	return string(b)
}

func (r *reader) fail() error {
	switch {
	case r.err == nil:
		return nil
	case errors.Is(r.err, ErrCorrupt):
		return r.err
	case errors.Is(r.err, io.EOF), errors.Is(r.err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, r.err)
}

// Load reads an index written by [Index.Save]. A damaged input yields an
// error wrapping [ErrCorrupt]; nothing is returned until the checksum has
// been verified.
func Load(in io.Reader) (*Index, error) {
	r := &reader{br: bufio.NewReaderSize(in, 1<<16), crc: crc32.New(castagnoli)}
	head := make([]byte, len(magic))
	r.full(head)
	if r.err == nil && string(head) != magic {
		return nil, fmt.Errorf("%w: not a keyword index (magic %q)", ErrCorrupt, head)
	}
	if v := r.u32(); r.err == nil && v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d is not supported (this build reads version %d)", ErrCorrupt, v, formatVersion)
	}
	k1, b := math.Float32frombits(r.u32()), math.Float32frombits(r.u32())
	ix := New(WithK1(float64(k1)), WithB(float64(b)))
	nDocs := r.uv(math.MaxUint32, "document count")
	for i := uint64(0); i < nDocs && r.err == nil; i++ {
		id := r.str()
		var meta map[string]string
		if pairs := r.uv(maxMetaPairs, "metadata size"); pairs > 0 {
			meta = make(map[string]string, pairs)
			for range pairs {
				k := r.str()
				meta[k] = r.str()
			}
		}
		length := r.uv(math.MaxUint32, "document length")
		if r.err != nil {
			break
		}
		if _, dup := ix.docs[id]; dup || id == "" {
			return nil, fmt.Errorf("%w: document %d: empty or duplicate ID %q", ErrCorrupt, i, id)
		}
		ix.docs[id] = uint32(i)
		ix.ids = append(ix.ids, id)
		ix.metas = append(ix.metas, meta)
		ix.lens = append(ix.lens, uint32(length))
		ix.docTerms = append(ix.docTerms, nil)
		ix.dead = append(ix.dead, false)
		ix.totalLen += length
	}
	ix.live = len(ix.ids)
	nTerms := r.uv(math.MaxUint32, "term count")
	for i := uint64(0); i < nTerms && r.err == nil; i++ {
		term := r.str()
		df := r.uv(nDocs, "posting count")
		if _, dup := ix.terms[term]; dup && r.err == nil {
			return nil, fmt.Errorf("%w: duplicate term %q", ErrCorrupt, term)
		}
		t := uint32(len(ix.postings))
		ix.terms[term] = t
		ps := make([]posting, 0, min(df, 1<<16))
		var doc uint64
		for j := uint64(0); j < df && r.err == nil; j++ {
			doc += r.uv(nDocs, "document delta")
			tf := r.uv(math.MaxUint16, "term frequency")
			if r.err == nil && (doc >= nDocs || tf == 0 || (j > 0 && doc == uint64(ps[len(ps)-1].doc))) {
				return nil, fmt.Errorf("%w: term %q: bad posting (document %d, frequency %d)", ErrCorrupt, term, doc, tf)
			}
			ps = append(ps, posting{uint32(doc), uint16(tf), sat16(ix.lens[doc])})
			ix.docTerms[doc] = append(ix.docTerms[doc], t)
		}
		ix.postings = append(ix.postings, ps)
		ix.df = append(ix.df, uint32(len(ps)))
	}
	if r.err != nil {
		return nil, r.fail()
	}
	want := r.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r.br, sum[:]); err != nil {
		r.err = err
		return nil, r.fail()
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, got, want)
	}
	return ix, nil
}

// SaveFile writes the index to path atomically: it saves into a temporary
// file in the same directory, syncs it and renames it over path, so a crash
// leaves the old file or the new one, never a torn mix.
func (ix *Index) SaveFile(path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("keyword: create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = ix.Save(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("keyword: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("keyword: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keyword: replace %s: %w", path, err)
	}
	// Persist the rename; not every filesystem can sync a directory, and the
	// data itself is already durable, so a failure here is ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Open reads an index saved with [Index.SaveFile].
func Open(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyword: %w", err)
	}
	defer f.Close()
	ix, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ix, nil
}
