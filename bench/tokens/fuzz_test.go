package tokens_test

import (
	"slices"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/weftlabs/weft/tokens"
)

var peers = sync.OnceValue(func() map[string]*tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	m := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			panic(err)
		}
		m[name] = enc
	}
	return m
})

// FuzzAgainstPeer checks Weft's hand-written pre-tokenisers and merge
// against pkoukk/tiktoken-go, which runs tiktoken's own patterns through a
// backtracking regex engine, on any input (invalid UTF-8 included: both
// replace each invalid byte with U+FFFD):
//
//	cd bench && go test -run XXX -fuzz FuzzAgainstPeer -fuzztime 2m ./tokens
func FuzzAgainstPeer(f *testing.F) {
	for _, s := range []string{
		"hello world", "I'm   here\n\n\tnow", "中文 日本語 한국어", "e\u0301\u0301A\u0301 ǅungla",
		"'S's 'LL 'ſ", "1234567 ١٢٣", "\r\n \r\n", "a/\n//", "😀👨‍👩‍👧", "  \u00a0\u3000x",
		"HTTPServer's XMLHttp Ĳssel", "ʰʲ ˢᵃ", "!!!\n\n?", "\u0301\u0302", " \u0301a",
		"a\xffb", "中\xe4\xb8文", "\xed\xa0\x80 \xc0\xaf",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range []*tokens.Encoding{tokens.CL100K(), tokens.O200K()} {
			want := peers()[enc.Name()].EncodeOrdinary(s)
			if got := enc.Encode(s); !slices.Equal(got, want) {
				t.Fatalf("%s.Encode(%q) = %v, peer %v", enc.Name(), s, got, want)
			}
		}
	})
}
