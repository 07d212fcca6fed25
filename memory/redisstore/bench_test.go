package redisstore_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
)

func benchRecords(n int) []memory.Record {
	recs := make([]memory.Record, n)
	for i := range recs {
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 25))
		m := llm.UserMessage(text)
		if i%2 == 1 {
			m = llm.AssistantMessage(text)
		}
		recs[i] = memory.Record{Message: m, Tokens: 60}
	}
	return recs
}

// BenchmarkRedis measures the store against the bare LRANGE of the same
// 50 entries in the same run, and reports round trips per operation.
func BenchmarkRedis(b *testing.B) {
	client := newClient(b, redisURL(b))
	var c counter
	client.AddHook(&c)
	prefix := newPrefix(b, client)
	s := newStore(b, client, prefix)
	ctx := b.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "bench"}
	if _, err := s.Append(ctx, key, benchRecords(200)...); err != nil {
		b.Fatal(err)
	}
	logKey := prefix + ":{t:t:a:a:s:bench}:log" // the layout of the package doc
	if n := client.LLen(ctx, logKey).Val(); n != 200 {
		b.Fatalf("%s holds %d entries, want 200", logKey, n)
	}
	roundTrips := func(b *testing.B) {
		b.ReportMetric(float64(c.n.Load())/float64(b.N), "roundtrips/op")
	}
	b.Run("LRANGE50", func(b *testing.B) {
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			if vals, err := client.LRange(ctx, logKey, -50, -1).Result(); err != nil || len(vals) != 50 {
				b.Fatal(len(vals), err)
			}
		}
		roundTrips(b)
	})
	b.Run("Load50", func(b *testing.B) {
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			if recs, err := s.Load(ctx, key, memory.Window{MaxMessages: 50}); err != nil || len(recs) != 50 {
				b.Fatal(len(recs), err)
			}
		}
		roundTrips(b)
	})
	// The script alone, without decoding the records: the server's and the
	// wire's share of Load.
	b.Run("LoadScriptOnly3000Tokens", func(b *testing.B) {
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			vals, err := redisstore.LoadScript.Run(ctx, client, []string{logKey, strings.TrimSuffix(logKey, "log") + "sys"}, 3000, 0).StringSlice()
			if err != nil || len(vals) != 51 {
				b.Fatal(len(vals), err)
			}
		}
		roundTrips(b)
	})
	b.Run("Load3000Tokens", func(b *testing.B) {
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			if recs, err := s.Load(ctx, key, memory.Window{MaxTokens: 3000}); err != nil || len(recs) != 50 {
				b.Fatal(len(recs), err)
			}
		}
		roundTrips(b)
	})
	b.Run("Append", func(b *testing.B) {
		rec := benchRecords(1)[0]
		k := memory.Key{Tenant: "t", Agent: "a", Session: "bench-append"}
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			if _, err := s.Append(ctx, k, rec); err != nil {
				b.Fatal(err)
			}
		}
		roundTrips(b)
	})
	// The naive layout of the package doc: a ZSET of seqs and one HGET per
	// message.
	for i, r := range benchRecords(200) {
		client.HSet(ctx, prefix+":naive:msgs", strconv.Itoa(i+1), r.Message.Text())
		client.ZAdd(ctx, prefix+":naive:seqs", redis.Z{Score: float64(i + 1), Member: i + 1})
	}
	b.Run("NaiveLoad50", func(b *testing.B) {
		b.ReportAllocs()
		c.n.Store(0)
		for b.Loop() {
			if n, err := naiveLoad(ctx, client, prefix, 50); err != nil || n != 50 {
				b.Fatal(n, err)
			}
		}
		roundTrips(b)
	})
}
