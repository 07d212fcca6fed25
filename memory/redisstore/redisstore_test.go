package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/memorytest"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

const (
	envURL    = "WEFT_REDISSTORE_TEST_URL"
	envPrefix = "WEFT_REDISSTORE_TEST_PREFIX"
)

func redisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("WEFT_TEST_REDIS_URL")
	if u == "" {
		t.Skip("WEFT_TEST_REDIS_URL is not set")
	}
	return u
}

// newPrefix returns a key prefix no other test uses; its keys are deleted
// when the test ends (never FLUSHDB: the server is shared).
func newPrefix(t testing.TB, client *redis.Client) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "weftmemtest-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup of %s: %v", prefix, err)
		}
	})
	return prefix
}

func newClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func newStore(t testing.TB, client redis.UniversalClient, prefix string) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(client, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	s := newStore(t, client, newPrefix(t, client))
	memorytest.Run(t, func(t *testing.T) memory.Store { return s })
}

// counter counts round trips: a command or a whole pipeline is one.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

func TestOneRoundTrip(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	var c counter
	client.AddHook(&c)
	s := newStore(t, client, newPrefix(t, client))
	ctx := t.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	recs := make([]memory.Record, 60)
	for i := range recs {
		recs[i] = memory.Record{ID: fmt.Sprint("m", i), Message: llm.UserMessage(strings.Repeat("x", i)), Tokens: 10}
	}
	measure := func(what string, fn func() error) {
		t.Helper()
		c.n.Store(0)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := c.n.Load(); n != 1 {
			t.Errorf("%s took %d round trips, want 1", what, n)
		}
	}
	// Steady state is what counts: a fresh Redis has no script cached, and
	// a script's first call loads it. Each operation runs once uncounted.
	count := func(what string, fn func() error) {
		t.Helper()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		measure(what, fn)
	}
	if _, err := s.Append(ctx, key, memory.Record{Message: llm.SystemMessage("sys"), Tokens: 3}); err != nil {
		t.Fatal(err)
	}
	// The lock's scripts are loaded by a first lease and its release.
	warm, err := s.Lock(ctx, key, memory.Lease{Owner: "roundtrips"})
	if err != nil {
		t.Fatal(err)
	}
	warm()
	if err := s.Close(); err != nil { // waits for the release (the client is the test's)
		t.Fatal(err)
	}
	count("Append of one record", func() error { _, err := s.Append(ctx, key, recs[0]); return err })
	count("Append of 59 records", func() error { _, err := s.Append(ctx, key, recs[1:]...); return err })
	count("Append of a repeated id", func() error { _, err := s.Append(ctx, key, recs[5]); return err })
	for _, w := range []memory.Window{{}, {MaxMessages: 50}, {MaxTokens: 500}, {MaxTokens: 100000}, {MaxTokens: 5, MaxMessages: 1}} {
		count(fmt.Sprintf("Load(%+v)", w), func() error {
			got, err := s.Load(ctx, key, w)
			if err == nil && len(got) == 0 {
				err = errors.New("nothing loaded")
			}
			return err
		})
	}
	// A turn's lock: one round trip to take (with the owner's set), one
	// to release (counted once Close has waited for it).
	var release func()
	measure("Lock", func() error {
		var err error
		release, err = s.Lock(ctx, key, memory.Lease{Owner: "roundtrips"})
		return err
	})
	measure("release", func() error { release(); return s.Close() })

	// A turn held through a Chat: one round trip to begin (lease, window
	// and the first record), one to end (the last records and the
	// release), and one to end without records (the release alone,
	// counted once Close has waited for it).
	chat := memory.NewChat(s, key, memory.Window{MaxTokens: 500}, memory.WithLease(memory.Lease{Owner: "roundtrips"}), memory.KeepAll())
	var h *memory.Hold
	begin := func() error {
		var recs []memory.Record
		var err error
		h, recs, err = chat.Begin(ctx, memory.Record{ID: "q", Message: llm.UserMessage("q"), Tokens: 1})
		if err == nil && len(recs) == 0 {
			err = errors.New("nothing loaded")
		}
		return err
	}
	end := func() error {
		return h.End(ctx, memory.Record{ID: "a", Message: llm.AssistantMessage("a"), Tokens: 1})
	}
	if err := errors.Join(begin(), end()); err != nil { // loads the scripts
		t.Fatal(err)
	}
	measure("Begin", begin)
	measure("End with a record", end)
	measure("Begin", begin)
	measure("End without records", func() error { return errors.Join(h.End(ctx), s.Close()) })
}

// naiveLoad is the layout the package doc warns about: a ZSET of sequence
// numbers and one HGET per message. It is here to count its round trips.
func naiveLoad(ctx context.Context, c *redis.Client, prefix string, n int) (int, error) {
	seqs, err := c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: prefix + ":naive:seqs", Start: 0, Stop: n - 1, Rev: true}).Result()
	if err != nil {
		return 0, err
	}
	for _, seq := range seqs {
		if err := c.HGet(ctx, prefix+":naive:msgs", seq).Err(); err != nil {
			return 0, err
		}
	}
	return len(seqs), nil
}

func TestNaiveLayoutRoundTrips(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	var c counter
	client.AddHook(&c)
	prefix := newPrefix(t, client)
	ctx := t.Context()
	for i := range 50 {
		seq := client.Incr(ctx, prefix+":naive:counter").Val()
		client.HSet(ctx, prefix+":naive:msgs", strconv.FormatInt(seq, 10), fmt.Sprint("message ", i))
		client.ZAdd(ctx, prefix+":naive:seqs", redis.Z{Score: float64(seq), Member: seq})
	}
	c.n.Store(0)
	n, err := naiveLoad(ctx, client, prefix, 50)
	if err != nil || n != 50 {
		t.Fatalf("naiveLoad = %d, %v", n, err)
	}
	if got := c.n.Load(); got != 51 {
		t.Errorf("naive load of 50 messages took %d round trips, want 51", got)
	}
}

func TestHelperProcess(t *testing.T) {
	memorytest.HelperProcess(t, func() (memory.Store, error) {
		return redisstore.Open(os.Getenv(envURL), redisstore.WithPrefix(os.Getenv(envPrefix)))
	})
}

func TestCrossProcess(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	client := newClient(t, url)
	prefix := newPrefix(t, client)
	s := newStore(t, client, prefix)
	env := []string{envURL + "=" + url, envPrefix + "=" + prefix}
	t.Run("two appenders", func(t *testing.T) { memorytest.CrossProcess(t, s, env, 60) })
	t.Run("SIGKILL", func(t *testing.T) { memorytest.KillMidAppend(t, s, env, 40) })
	t.Run("SIGKILL holder", func(t *testing.T) { memorytest.KillHolder(t, s, env, time.Second) })
	t.Run("SIGKILL turn holder", func(t *testing.T) { memorytest.KillTurnHolder(t, s, env, time.Second) })
}

func TestKeysStayInOneSlot(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	prefix := newPrefix(t, client)
	s := newStore(t, client, prefix)
	ctx := t.Context()
	for _, key := range []memory.Key{
		{Tenant: "acme", Agent: "support", Session: "s-1"},
		{Tenant: "a}{b", Agent: "x:y", Session: strings.Repeat("long", 40)},
	} {
		if _, err := s.Append(ctx, key, memory.Record{Message: llm.SystemMessage("s")}, memory.Record{Message: llm.UserMessage("q")}); err != nil {
			t.Fatal(err)
		}
		var keys []string
		iter := client.Scan(ctx, 0, prefix+":{*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		slots := map[int64]bool{}
		for _, k := range keys {
			slots[client.ClusterKeySlot(ctx, k).Val()] = true
		}
		if len(keys) < 4 || len(slots) != 1 {
			t.Errorf("keys %q span %d slots, want 1", keys, len(slots))
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTTL(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	prefix := newPrefix(t, client)
	s, err := redisstore.New(client, redisstore.WithPrefix(prefix), redisstore.WithTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	if _, err := s.Append(ctx, key, memory.Record{Message: llm.UserMessage("q")}); err != nil {
		t.Fatal(err)
	}
	iter := client.Scan(ctx, 0, prefix+":*", 100).Iterator()
	n := 0
	for iter.Next(ctx) {
		ttl := client.PTTL(ctx, iter.Val()).Val()
		if ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("%s has TTL %v, want about an hour", iter.Val(), ttl)
		}
		n++
	}
	if n < 5 {
		t.Errorf("found %d keys, want the conversation's and the indexes", n)
	}
	if _, err := redisstore.New(client, redisstore.WithPrefix("a{b")); err == nil {
		t.Error("New accepted a prefix with a brace")
	}
	if _, err := redisstore.New(client, redisstore.WithTTL(0)); err == nil {
		t.Error("New accepted a zero TTL")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a private redis-server on port and waits until it
// answers PING.
func startRedis(t *testing.T, port int) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(t.Context()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not answer PING within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd
}

func TestRedisRestart(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	t.Parallel()
	port := freePort(t)
	srv := startRedis(t, port)
	s, err := redisstore.Open(fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "s"}
	op := func() ([]memory.Record, error) {
		// go-redis retries a refused dial for a few seconds before it
		// gives up with the cause; a shorter deadline ends it first with
		// context.DeadlineExceeded.
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		if _, err := s.Append(ctx, key, memory.Record{Message: llm.UserMessage("q"), Tokens: 1}); err != nil {
			return nil, err
		}
		return s.Load(ctx, key, memory.Window{MaxTokens: 10})
	}
	if got, err := op(); err != nil || len(got) != 1 {
		t.Fatalf("before the restart: %d records, %v", len(got), err)
	}

	_ = srv.Process.Kill()
	_ = srv.Wait()
	_, err = op()
	if err == nil {
		t.Fatal("Append succeeded with Redis down")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "redisstore: append t/a/s: ") || !strings.Contains(msg, "connection refused") {
		t.Errorf("error with Redis down = %q, want the store, the operation, the key and the cause", msg)
	}

	// Same port, empty server, empty script cache: the store recovers.
	startRedis(t, port)
	got, err := op()
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("after the restart Load = %+v, want one record with Seq 1", got)
	}
}

// TestTokenWindowAfterTrim checks token windows against the rule of
// memory.Store.Load over a log changed by appends, repeated ids and a trim.
func TestTokenWindowAfterTrim(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	s := newStore(t, client, newPrefix(t, client))
	ctx := t.Context()
	key := memory.Key{Tenant: "t", Agent: "a", Session: "counts"}
	var recs []memory.Record
	for i := range 40 {
		recs = append(recs, memory.Record{ID: fmt.Sprint("m", i), Message: llm.UserMessage(fmt.Sprint("q", i)), Tokens: i%7 + 1})
	}
	if _, err := s.Append(ctx, key, append([]memory.Record{{Message: llm.SystemMessage("sys"), Tokens: 5}}, recs[:30]...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, key, recs[25:]...); err != nil { // 25–29 are repeats
		t.Fatal(err)
	}
	if err := s.Trim(ctx, key, 8); err != nil {
		t.Fatal(err)
	}
	all, err := s.Load(ctx, key, memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 34 {
		t.Fatalf("stored %d records, want the system one and 33", len(all))
	}
	for _, w := range []memory.Window{{MaxTokens: 1}, {MaxTokens: 30}, {MaxTokens: 61}, {MaxTokens: 1000}, {MaxTokens: 30, MaxMessages: 4}} {
		log := all[1:]
		start, sum := len(log), 0
		for start > 0 && (w.MaxMessages == 0 || len(log)-start < w.MaxMessages) && sum+log[start-1].Tokens <= w.MaxTokens {
			sum += log[start-1].Tokens
			start--
		}
		want := []string{"sys"}
		for _, r := range log[start:] {
			want = append(want, r.Message.Text())
		}
		got, err := s.Load(ctx, key, w)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, r := range got {
			texts = append(texts, r.Message.Text())
		}
		if !slices.Equal(texts, want) {
			t.Errorf("Load(%+v) = %q, want %q", w, texts, want)
		}
	}
}

// TestEngineTurnRoundTrips counts the Redis round trips of a turn the
// engine owns, with a tool round: two, one to begin (the lease, the window
// and the user message) and one to end (the tool round, the answer and the
// release), also with a summary (read with the window); a chat that trims
// what fell out of its window adds the trim.
func TestEngineTurnRoundTrips(t *testing.T) {
	t.Parallel()
	client := newClient(t, redisURL(t))
	var c counter
	client.AddHook(&c)
	s := newStore(t, client, newPrefix(t, client))
	weather := tool.Func("weather", "Current weather of a city.", func(ctx context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return "21 degrees in " + in.City, nil
	})
	// A tool call for the question, the answer after the tool's result.
	model := scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
			call := llm.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Paris"}`}
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, FinishReason: llm.FinishToolCalls}, nil
		}
		return &llm.Response{Message: llm.AssistantMessage("It is 21 degrees.")}, nil
	}})
	eng, err := ai.NewEngine(model, ai.Tools(weather))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	lease := memory.WithLease(memory.Lease{Owner: "roundtrips"})
	// A conversation with a summary: Begin reads it in its round trip (no
	// fold runs: the threshold is far).
	summarized := memory.Key{Tenant: "t", Agent: "a", Session: "summarized"}
	if _, err := s.Append(ctx, summarized, memory.Record{Message: llm.UserMessage("I am Ada."), Tokens: 4}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SaveSummary(ctx, summarized, memory.Summary{Text: "The user is Ada.", Through: 1}, 0); !ok || err != nil {
		t.Fatalf("SaveSummary = %v, %v", ok, err)
	}
	sum := memory.NewSummarizer(scripted.New(), memory.SummaryThreshold(1<<20))
	defer sum.Close()
	for _, tt := range []struct {
		name string
		chat *memory.Chat
		want int64
	}{
		{"token window", memory.NewChat(s, memory.Key{Tenant: "t", Agent: "a", Session: "tokens"}, memory.Window{MaxTokens: 8000, Reserve: 1000}, lease, memory.KeepAll()), 2},
		{"message window", memory.NewChat(s, memory.Key{Tenant: "t", Agent: "a", Session: "messages"}, memory.Window{MaxMessages: 20}, lease, memory.KeepAll()), 2},
		{"message window, trimmed", memory.NewChat(s, memory.Key{Tenant: "t", Agent: "a", Session: "trimmed"}, memory.Window{MaxMessages: 2}, lease), 3},
		{"token window with a summary", memory.NewChat(s, summarized, memory.Window{MaxTokens: 8000, Reserve: 1000}, lease, memory.WithSummary(sum)), 2},
	} {
		for i := range 3 { // the first turn loads the scripts
			c.n.Store(0)
			turn := ai.Turn{ID: fmt.Sprint("turn-", i), System: "Be brief.", Memory: tt.chat, Message: llm.UserMessage("weather in Paris?")}
			out, err := eng.Do(ctx, turn)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if len(out.ToolExecutions) != 1 {
				t.Fatalf("%s: %d tool calls, want 1", tt.name, len(out.ToolExecutions))
			}
			if tt.chat.Summarizer() != nil && (out.Summary == nil || out.Summary.Text != "The user is Ada.") {
				t.Fatalf("%s: the turn's summary = %+v", tt.name, out.Summary)
			}
			if n := c.n.Load(); i > 0 && n != tt.want {
				t.Errorf("%s: turn %d took %d round trips, want %d", tt.name, i, n, tt.want)
			}
		}
	}
	recs, err := s.Load(ctx, memory.Key{Tenant: "t", Agent: "a", Session: "tokens"}, memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	// The system message, then per turn the question, the tool round and the answer.
	if len(recs) != 1+3*4 || recs[1].ID != "turn-0-q" || recs[4].ID != "turn-0" {
		t.Errorf("stored %d records (ids %q, %q), want 13", len(recs), recs[1].ID, recs[4].ID)
	}
}
