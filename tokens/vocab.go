package tokens

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// vocab is an encoding's rank table: the tokens in rank order and an
// open-addressing hash table from token bytes to rank. Go's map would serve,
// but this read-only table is both smaller and faster: a token of up to 8
// bytes (nearly every lookup of a merge) is stored packed in its slot, so a
// lookup reads one slot and nothing else.
type vocab struct {
	data     string   // all tokens, concatenated in rank order
	offs     []uint32 // token r is data[offs[r]:offs[r+1]]
	slots    []slot
	mask     uint64
	filter   []uint64    // one bit per token hash: most misses stop here, in cache
	shift    uint        // 64 - log2 of the filter's size in bits
	byteRank [256]uint32 // rank of each single-byte token
	pairRank []uint32    // rank of each two-byte token, by b0<<8|b1; noRank if none
	cache    pieceCache  // tokens of recently merged short pieces
}

// slot holds a token of up to 8 bytes packed little-endian in key, or the
// hash of a longer one. rank is the token's rank plus one; 0 marks an empty
// slot.
type slot struct {
	key       uint64
	rank, len uint32
}

const noRank = math.MaxUint32

// filterBits is the size of the miss filter in bits per token (rounded up
// to a power of two): at 8, a lookup of a string that is no token returns
// without touching the table nine times in ten.
const filterBits = 8

// loadVocab decodes a table written by internal/gen.
func loadVocab(gz []byte) (*vocab, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	const magic = "WEFTBPE1"
	if !bytes.HasPrefix(raw, []byte(magic)) {
		return nil, errors.New("bad magic")
	}
	raw = raw[len(magic):]
	n, k := binary.Uvarint(raw)
	if k <= 0 || n == 0 || n > 1<<24 {
		return nil, errors.New("bad token count")
	}
	raw = raw[k:]
	v := &vocab{offs: make([]uint32, 0, n+1), cache: newPieceCache()}
	data := make([]byte, 0, len(raw))
	for range n {
		l, k := binary.Uvarint(raw)
		if k <= 0 || l == 0 || uint64(len(raw)-k) < l {
			return nil, fmt.Errorf("bad token %d", len(v.offs))
		}
		v.offs = append(v.offs, uint32(len(data)))
		data = append(data, raw[k:k+int(l)]...)
		raw = raw[k+int(l):]
	}
	v.offs = append(v.offs, uint32(len(data)))
	v.data = string(data)

	size := uint64(1)
	for size < 2*n {
		size <<= 1
	}
	v.slots = make([]slot, size)
	v.mask = size - 1
	v.filter = make([]uint64, size*filterBits/2/64)
	v.shift = uint(64 - bits.TrailingZeros64(size*filterBits/2))
	for i := range v.byteRank {
		v.byteRank[i] = noRank
	}
	v.pairRank = make([]uint32, 1<<16)
	for i := range v.pairRank {
		v.pairRank[i] = noRank
	}
	for r := range uint32(n) {
		tok := v.token(r)
		switch len(tok) {
		case 1:
			v.byteRank[tok[0]] = r
		case 2:
			v.pairRank[uint16(tok[0])<<8|uint16(tok[1])] = r
		}
		key, h := keyHash(tok)
		f := h >> v.shift
		v.filter[f/64] |= 1 << (f % 64)
		for i := h & v.mask; ; i = (i + 1) & v.mask {
			if v.slots[i].rank == 0 {
				v.slots[i] = slot{key: key, rank: r + 1, len: uint32(len(tok))}
				break
			}
		}
	}
	for b, r := range v.byteRank {
		if r == noRank {
			return nil, fmt.Errorf("byte %#x has no token", b)
		}
	}
	return v, nil
}

// token returns the bytes of the token with rank r.
func (v *vocab) token(r uint32) string { return v.data[v.offs[r]:v.offs[r+1]] }

// size returns the number of ordinary tokens.
func (v *vocab) size() int { return len(v.offs) - 1 }

// rank returns the rank of s, or noRank if s is not a token.
func (v *vocab) rank(s string) uint32 {
	if len(s) == 2 {
		return v.pair(s[0], s[1])
	}
	key, h := keyHash(s)
	return v.find(s, key, h)
}

// mergeRank is rank for the candidate pairs of a merge, which are mostly
// not tokens: it asks the filter first.
func (v *vocab) mergeRank(s string) uint32 {
	key, h := keyHash(s)
	if f := h >> v.shift; v.filter[f/64]&(1<<(f%64)) == 0 {
		return noRank
	}
	return v.find(s, key, h)
}

func (v *vocab) find(s string, key, h uint64) uint32 {
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := &v.slots[i]
		if e.rank == 0 {
			return noRank
		}
		if e.key == key && e.len == uint32(len(s)) {
			r := e.rank - 1
			if len(s) <= 8 || v.data[v.offs[r]:v.offs[r+1]] == s {
				return r
			}
		}
	}
}

// pair returns the rank of the two-byte token b0 b1, or noRank. Two-byte
// lookups start every merge, and a direct table of 256 KB answers them
// from cache.
func (v *vocab) pair(b0, b1 byte) uint32 { return v.pairRank[uint16(b0)<<8|uint16(b1)] }

// keyHash returns the slot key of s (s itself packed into a word if it is
// up to 8 bytes long, else its hash) and the hash that picks its first slot.
func keyHash(s string) (key, h uint64) {
	const m1, m2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
	switch n := len(s); {
	case n <= 8:
		key = pack(s)
		h = (key ^ uint64(n)<<59) * m1
		return key, h ^ h>>29
	default:
		h = uint64(n) * m2
		for len(s) > 8 {
			h = (h ^ le64(s)) * m1
			h ^= h >> 29
			s = s[8:]
		}
		h = (h ^ le64pad(s)) * m2
		h ^= h >> 32
		return h, h
	}
}

// pack returns the up to 8 bytes of s as a little-endian word.
func pack(s string) uint64 {
	switch len(s) {
	case 8:
		return le64(s)
	case 4, 5, 6, 7:
		lo := uint64(le32(s))
		hi := uint64(le32(s[len(s)-4:]))
		return lo | hi<<(8*(len(s)-4))
	}
	return le64pad(s)
}

// le64pad packs the 0 to 8 bytes of s, zero-padded.
func le64pad(s string) uint64 {
	var k uint64
	for i := len(s) - 1; i >= 0; i-- {
		k = k<<8 | uint64(s[i])
	}
	return k
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
