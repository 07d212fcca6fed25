package tokens

import "sync/atomic"

// pieceCache remembers the tokens of recently merged pieces of up to 16
// bytes, so that the words a text repeats (identifiers, names, inflected
// words) are merged once. It is a fixed-size, direct-mapped table: bounded,
// allocation-free, and safe for concurrent use without locks. Each entry is
// a sequence lock: a writer makes seq odd, writes, and makes it even again; a
// reader trusts what it read only if seq was even and unchanged around its
// reads. Every field is atomic, so readers and writers never race.
type pieceCache struct {
	entries []cacheEntry
}

const (
	cacheEntries   = 2048
	cacheMaxBytes  = 16
	cacheMaxTokens = 8
)

// cacheEntry is one cache line: the piece packed into key, its length and
// token count in meta, and up to eight tokens two to a word.
type cacheEntry struct {
	seq  atomic.Uint64
	key  [2]atomic.Uint64
	meta atomic.Uint64 // len | count<<8
	tok  [cacheMaxTokens / 2]atomic.Uint64
}

func newPieceCache() pieceCache { return pieceCache{entries: make([]cacheEntry, cacheEntries)} }

// cacheKey packs a piece of up to 16 bytes and picks its entry.
func cacheKey(p string) (k0, k1 uint64, e uint64) {
	if len(p) > 8 {
		k0, k1 = le64(p), le64pad(p[8:])
	} else {
		k0 = pack(p)
	}
	h := (k0 ^ k1*0x9E3779B97F4A7C15 ^ uint64(len(p))) * 0xC2B2AE3D27D4EB4F
	return k0, k1, (h ^ h>>32) % cacheEntries
}

// get copies the tokens of p into out and returns their number, or returns
// false if p is not cached.
func (c *pieceCache) get(p string, out *[cacheMaxTokens]uint32) (int, bool) {
	k0, k1, i := cacheKey(p)
	e := &c.entries[i]
	seq := e.seq.Load()
	if seq&1 != 0 || e.key[0].Load() != k0 || e.key[1].Load() != k1 {
		return 0, false
	}
	meta := e.meta.Load()
	if int(meta&0xff) != len(p) {
		return 0, false
	}
	n := int(meta >> 8)
	for j := 0; j < n; j += 2 {
		w := e.tok[j/2].Load()
		out[j], out[j+1] = uint32(w), uint32(w>>32)
	}
	if e.seq.Load() != seq {
		return 0, false
	}
	return n, true
}

// put caches the tokens of p, unless p is too long, has too many tokens,
// or another goroutine is writing the same entry.
func (c *pieceCache) put(p string, toks []uint32) {
	if len(p) > cacheMaxBytes || len(toks) > cacheMaxTokens {
		return
	}
	k0, k1, i := cacheKey(p)
	e := &c.entries[i]
	seq := e.seq.Load()
	if seq&1 != 0 || !e.seq.CompareAndSwap(seq, seq+1) {
		return
	}
	e.key[0].Store(k0)
	e.key[1].Store(k1)
	e.meta.Store(uint64(len(p)) | uint64(len(toks))<<8)
	for j := 0; j < len(toks); j += 2 {
		w := uint64(toks[j])
		if j+1 < len(toks) {
			w |= uint64(toks[j+1]) << 32
		}
		e.tok[j/2].Store(w)
	}
	e.seq.Store(seq + 2)
}
