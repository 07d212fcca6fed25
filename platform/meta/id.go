package meta

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random identifier with a readable prefix, e.g. "agt_k3j…".
// 80 random bits: unique without coordination between servers.
func NewID(prefix string) string {
	var b [10]byte
	rand.Read(b[:])
	var sb strings.Builder
	sb.Grow(len(prefix) + 17)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	sb.WriteString(idEncoding.EncodeToString(b[:]))
	return sb.String()
}
