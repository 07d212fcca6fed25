package platform

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/tokens"
)

// BenchmarkTurn runs blocking chat turns through the server's handler (no
// network: the handler is called directly) with a scripted model, on each
// session store, from 32 concurrent clients over 256 sessions that each
// hold 10 turns of history (the agent's window keeps exactly those). Besides ns/op and allocs/op it reports
// written-KiB/turn (bytes written by the process per turn: SQLite's WAL
// frames) and cpu-µs/turn, the process's CPU time (user + system, every thread) per
// turn: on a machine shared with other work wall time mostly measures
// waiting for a core, CPU time what a turn costs. The metadata store is
// SQLite throughout; Redis rows need WEFT_TEST_REDIS_URL.
//
//	go test -run '^$' -bench BenchmarkTurn -benchtime 4000x ./platform/
func BenchmarkTurn(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "sessions.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchTurns(b, st)
	})
	b.Run("redis", func(b *testing.B) {
		url := os.Getenv("WEFT_TEST_REDIS_URL")
		if url == "" {
			b.Skip("WEFT_TEST_REDIS_URL not set")
		}
		opts, err := redis.ParseURL(url)
		if err != nil {
			b.Fatal(err)
		}
		rdb := redis.NewClient(opts)
		b.Cleanup(func() { rdb.Close() })
		prefix := "weftturnbench" + strconv.FormatInt(time.Now().UnixNano(), 36)
		st, err := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithTTL(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			ctx := context.Background()
			iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
			for iter.Next(ctx) {
				rdb.Unlink(ctx, iter.Val())
			}
		})
		benchTurns(b, st)
	})
	b.Run("inmemory", func(b *testing.B) { benchTurns(b, memory.NewInMemory()) })
}

func benchTurns(b *testing.B, sessions memory.Store) {
	e := newEnv(b, nil, func(c *Config) { c.Sessions = sessions })
	const nSessions, history = 256, 10
	// The agent's window holds the query and exactly 10 earlier turns (as
	// cmd/weft-bench sizes it), however long the sessions grow.
	const system = "You answer questions."
	c := tokens.ForModel("scripted/demo")
	q := tokens.MessageTokens(c, llm.UserMessage(benchQuery(100000)))
	need := tokens.ReplyOverhead + tokens.MessageTokens(c, llm.SystemMessage(system)) + q + history*2*q + q/2
	reserve := max(64, 256-need)
	a := e.createAgent(e.admin, map[string]any{"name": "bench", "system_prompt": system,
		"context_window_tokens": need + reserve, "reserve_tokens": reserve})
	ids := make([]string, nSessions)
	for i := range ids {
		var ans api.ChatAnswer
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": benchQuery(i * history)}, &ans)
		ids[i] = ans.SessionID
		for t := 1; t < history; t++ {
			e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": benchQuery(i*history + t), "session_id": ans.SessionID}, nil)
		}
	}
	path := "/v1/agents/" + a.ID + "/chat"
	var next atomic.Int64
	turn := func() error {
		i := next.Add(1)
		body := fmt.Appendf(nil, `{"query":%q,"session_id":%q}`, benchQuery(int(i)), ids[i%nSessions])
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.admin)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			return fmt.Errorf("turn: %d %s", w.Code, w.Body.String())
		}
		return nil
	}
	b.SetParallelism(16) // 32 clients on 2 cores
	b.ReportAllocs()
	cpu0, w0 := cpuTime(), writtenBytes()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := turn(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/turn")
	b.ReportMetric(float64(writtenBytes()-w0)/1024/float64(b.N), "written-KiB/turn")
}

// writtenBytes is what the process has written through write system calls
// so far (wchar of /proc/self/io: the SQLite WAL's frames, the HTTP
// answers); 0 where there is no /proc.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// benchQuery is the i-th query: a dozen words, echoed by the model.
func benchQuery(i int) string {
	return "Turn " + strconv.Itoa(i) + ": which of our plans includes priority support and what does it cost per month?"
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
