package tokens

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// vocab is an encoding's rank table: the tokens in rank order and an
// open-addressing hash table from token bytes to rank. Go's map would serve,
// but at 16+ bytes of header per key and a hash call per lookup it is both
// larger and slower than this read-only table, whose slots carry a hash tag
// so that most misses never touch the token bytes.
type vocab struct {
	data     string   // all tokens, concatenated in rank order
	offs     []uint32 // token r is data[offs[r]:offs[r+1]]
	slots    []uint64 // hash tag << 32 | rank+1; 0 marks an empty slot
	mask     uint64
	byteRank [256]uint32 // rank of each single-byte token
}

const noRank = math.MaxUint32

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
	v := &vocab{offs: make([]uint32, 0, n+1)}
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
	v.slots = make([]uint64, size)
	v.mask = size - 1
	for i := range v.byteRank {
		v.byteRank[i] = noRank
	}
	for r := range uint32(n) {
		tok := v.token(r)
		if len(tok) == 1 {
			v.byteRank[tok[0]] = r
		}
		h := hash(tok)
		for i := h & v.mask; ; i = (i + 1) & v.mask {
			if v.slots[i] == 0 {
				v.slots[i] = h&^0xffffffff | uint64(r+1)
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
	h := hash(s)
	tag := h &^ 0xffffffff
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := v.slots[i]
		if e == 0 {
			return noRank
		}
		if e&^0xffffffff == tag {
			r := uint32(e) - 1
			if v.data[v.offs[r]:v.offs[r+1]] == s {
				return r
			}
		}
	}
}

// hash mixes s into 64 bits; the low bits pick the slot and the high 32 are
// the tag. Tokens are short, so it reads at most two overlapping words for
// up to 16 bytes.
func hash(s string) uint64 {
	const m1, m2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
	n := len(s)
	h := uint64(n) * m1
	for len(s) > 16 {
		h = (h ^ le64(s)) * m2
		h = (h ^ le64(s[8:])) * m1
		h ^= h >> 31
		s = s[16:]
	}
	var a, b uint64
	switch {
	case len(s) >= 8:
		a, b = le64(s), le64(s[len(s)-8:])
	case len(s) >= 4:
		a, b = uint64(le32(s)), uint64(le32(s[len(s)-4:]))
	case len(s) > 0:
		a = uint64(s[0])<<16 | uint64(s[len(s)>>1])<<8 | uint64(s[len(s)-1])
	}
	h = (h ^ a) * m2
	h = (h ^ b ^ h>>29) * m1
	return h ^ h>>32
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
