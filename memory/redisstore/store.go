// Package redisstore keeps conversations in Redis: one round trip to load a
// window, one to append, TTL refreshed on every append, one strict order per
// conversation across any number of processes.
//
// # Layout
//
// A conversation's keys share one hash tag, so that they sit in one Cluster
// slot and one Lua script can touch them all atomically:
//
//	<prefix>:{<tag>}:log   LIST of "<tokens>|<seq>|<payload>", oldest first
//	<prefix>:{<tag>}:ids   HASH client message id → seq (idempotent appends)
//	<prefix>:{<tag>}:sys   STRING "<tokens>|0|<json>", the system record
//	<prefix>:{<tag>}:meta  HASH last (seq), count, created, updated (Unix ns), systext (hash of the system text)
//	<prefix>:{<tag>}:lock  STRING lease token (SET NX PX), the Locker's and the TurnStore's
//	<prefix>:{<tag>}:sum   STRING "<through>|<tokens>|<updated (Unix ns)>|<text>", the running summary
//
// The tag is "t:<tenant>:a:<agent>:s:<session>" when the names are short
// and made of letters, digits and "-_.@"; otherwise it is "h:" and a SHA-256
// of the three names, so that no name can break out of the tag or make two
// keys one. Two sorted sets per tenant index conversations by update time
// for List (they live in other slots, and are written in the same pipeline
// as the append script):
//
//	<prefix>:idx:<len>:<tenant>             member "<len>:<agent><session>"
//	<prefix>:idx:<len>:<tenant>:<len>:<agent>  member "<session>"
//
// The payload of a message with one text part and nothing else (most
// messages) is "~<role>|<Unix ns>|<partial 0/1>|<len(id)>:<id><text>", which
// decodes without scanning the text; any other message is JSON,
// {"i": id, "m": message, "t": Unix ns, "p": partial}. Decoding is most of
// Load's cost on the client.
//
// Load is one round trip: with a token budget, one EVALSHA of a script that
// reads the system record and walks the log from its tail in growing LRANGE
// chunks, summing the token prefix of each entry until the budget is spent,
// and returns only what fits; with a message bound alone, a pipeline of GET
// and LRANGE, which spares the script's cost. That cost is mostly Redis
// handing each entry to Lua and back (an LRANGE inside a script costs
// several times the bare command); keeping the token counts apart from the
// entries does not avoid it, since the kept entries still pass through the
// script. Append is one
// pipeline: EVALSHA of a script that checks ids, assigns sequence numbers
// from meta.last, pushes the entries and refreshes the TTL, plus the index
// updates. After a Redis restart EVALSHA meets NOSCRIPT and the store falls
// back to EVAL, which caches the script again.
//
// The naive layout — an INCR counter, a HASH seq → message, a ZSET of seqs,
// and one HGET per message to load — costs N+1 round trips to load N
// messages, cannot cut a token window without fetching everything, and needs
// WATCH/MULTI or a lock to keep idempotency checks and sequence numbers in
// one order. The round-trip tests count commands with a go-redis hook.
package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

// DefaultTTL is how long a conversation lives after its last append.
const DefaultTTL = 7 * 24 * time.Hour

// Store is a [memory.Store] over Redis. It also implements
// [memory.Lister], [memory.Locker], [memory.TurnStore], [memory.Trimmer]
// and [memory.SummaryStore]. It is safe for concurrent use, also by many
// processes sharing one Redis.
type Store struct {
	client  redis.UniversalClient
	owned   bool
	prefix  string
	ttl     time.Duration
	wakeups lease.Wakeups
	// releases counts lock releases in flight; Close waits for them.
	releases sync.WaitGroup
}

var (
	_ memory.Store        = (*Store)(nil)
	_ memory.Lister       = (*Store)(nil)
	_ memory.Locker       = (*Store)(nil)
	_ memory.Trimmer      = (*Store)(nil)
	_ memory.SummaryStore = (*Store)(nil)
)

// Option configures a [Store].
type Option func(*Store)

// WithPrefix sets the prefix of every key the store writes ("weft" by
// default). It must not contain braces.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithTTL sets how long a conversation lives after its last append
// (DefaultTTL by default).
func WithTTL(d time.Duration) Option { return func(s *Store) { s.ttl = d } }

// New returns a store over a client the caller owns (a *redis.Client,
// *redis.ClusterClient or *redis.Ring). Close does not close it.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	s := &Store{client: client, prefix: "weft", ttl: DefaultTTL}
	for _, o := range opts {
		o(s)
	}
	if strings.ContainsAny(s.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q contains a brace", s.prefix)
	}
	if s.ttl <= 0 {
		return nil, fmt.Errorf("redisstore: ttl %v is not positive", s.ttl)
	}
	return s, nil
}

// Open connects to the Redis at url ("redis://host:6379/0",
// "rediss://…" for TLS) and returns a store that owns the client.
func Open(url string, opts ...Option) (*Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: open: %w", err)
	}
	s, err := New(redis.NewClient(o), opts...)
	if err != nil {
		return nil, err
	}
	s.owned = true
	return s, nil
}

// Ping reports whether Redis answers (the platform's /readyz).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: ping: %w", err)
	}
	return nil
}

// Close waits for lock releases in flight and closes the client if the
// store opened it.
func (s *Store) Close() error {
	s.releases.Wait()
	if s.owned {
		return s.client.Close()
	}
	return nil
}

type keys struct{ log, ids, sys, meta, lock, sum string }

func (s *Store) keys(k memory.Key) keys {
	base := s.prefix + ":{" + tag(k) + "}:"
	return keys{base + "log", base + "ids", base + "sys", base + "meta", base + "lock", base + "sum"}
}

func tag(k memory.Key) string {
	if safe(k.Tenant) && safe(k.Agent) && safe(k.Session) {
		return "t:" + k.Tenant + ":a:" + k.Agent + ":s:" + k.Session
	}
	h := sha256.New()
	for _, s := range []string{k.Tenant, k.Agent, k.Session} {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	return "h:" + hex.EncodeToString(h.Sum(nil))
}

func safe(s string) bool {
	if len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '@') {
			return false
		}
	}
	return true
}

func lenPrefixed(s string) string { return strconv.Itoa(len(s)) + ":" + s }

func (s *Store) tenantIndex(tenant string) string { return s.prefix + ":idx:" + lenPrefixed(tenant) }

func (s *Store) agentIndex(tenant, agent string) string {
	return s.tenantIndex(tenant) + ":" + lenPrefixed(agent)
}

func fail(op string, key memory.Key, err error) error {
	return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
}

// Append implements [memory.Store] in one round trip.
func (s *Store) Append(ctx context.Context, key memory.Key, recs ...memory.Record) ([]memory.Record, error) {
	if len(recs) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, fail("append", key, err)
		}
		return nil, nil
	}
	now := time.Now().UTC().Round(0)
	args := make([]any, 0, 2+5*len(recs))
	args = append(args, s.ttl.Milliseconds(), now.UnixNano())
	in := make([]memory.Record, len(recs))
	args, err := encodeRecords(args, recs, now, in)
	if err != nil {
		return nil, fail("append", key, err)
	}
	k := s.keys(key)
	res, err := s.run(ctx, appendScript, []string{k.log, k.ids, k.sys, k.meta, k.sum}, args, func(p redis.Pipeliner) {
		s.index(ctx, p, key, now)
	})
	if err != nil {
		return nil, fail("append", key, err)
	}
	vals, err := res.Slice()
	if err != nil || len(vals) != len(in) {
		return nil, fail("append", key, fmt.Errorf("unexpected reply %v: %v", res.Val(), err))
	}
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			in[i].Seq = v
		case string:
			r, err := decodeEntry(v)
			if err != nil {
				return nil, fail("append", key, err)
			}
			in[i] = r
		default:
			return nil, fail("append", key, fmt.Errorf("unexpected reply %v for record %d", v, i))
		}
	}
	return in, nil
}

// encodeRecords appends to args the five arguments of each record that the
// append script takes, giving records without an id a fresh one and
// records without a time now. When out is not nil, out[i] is recs[i] with
// that id and time and a message decoded from the store's copy (what
// Append returns: it shares no memory with the caller's).
func encodeRecords(args []any, recs []memory.Record, now time.Time, out []memory.Record) ([]any, error) {
	for i, r := range recs {
		if r.ID == "" {
			r.ID = memory.NewID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		payload, err := encodePayload(r)
		if err != nil {
			return nil, fmt.Errorf("encode record %d: %w", i, err)
		}
		kind, th := "l", ""
		if r.Message.Role == llm.RoleSystem {
			sum := sha256.Sum256([]byte(r.Message.Text()))
			kind, th = "s", hex.EncodeToString(sum[:])
		}
		args = append(args, kind, r.ID, r.Tokens, payload, th)
		if out != nil {
			c, err := decodePayload(payload)
			if err != nil {
				return nil, err
			}
			r.Message = c.Message
			out[i] = r
		}
	}
	return args, nil
}

// run runs script in a pipeline with the commands extra adds (index and
// owner-set updates, which live in other slots than a conversation's keys),
// one round trip, and returns the script's reply. After a Redis restart
// EVALSHA meets NOSCRIPT, and the pipeline runs again with EVAL, which
// caches the script again.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args []any, extra func(p redis.Pipeliner)) (*redis.Cmd, error) {
	try := func(eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) (*redis.Cmd, error) {
		var res *redis.Cmd
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = eval(ctx, p, keys, args...)
			extra(p)
			return nil
		})
		if err == nil {
			err = res.Err()
		}
		return res, err
	}
	res, err := try(script.EvalSha)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = try(script.Eval)
	}
	return res, err
}

// index adds to p the updates of the tenant's and the agent's indexes of
// conversations for an append to key at now.
func (s *Store) index(ctx context.Context, p redis.Pipeliner, key memory.Key, now time.Time) {
	ti, ai := s.tenantIndex(key.Tenant), s.agentIndex(key.Tenant, key.Agent)
	score := float64(now.UnixMilli())
	stale := strconv.FormatInt(now.Add(-s.ttl).UnixMilli(), 10)
	p.ZAdd(ctx, ti, redis.Z{Score: score, Member: lenPrefixed(key.Agent) + key.Session})
	p.ZAdd(ctx, ai, redis.Z{Score: score, Member: key.Session})
	p.ZRemRangeByScore(ctx, ti, "-inf", "("+stale)
	p.ZRemRangeByScore(ctx, ai, "-inf", "("+stale)
	p.PExpire(ctx, ti, s.ttl)
	p.PExpire(ctx, ai, s.ttl)
}

// Load implements [memory.Store] in one round trip: a window bounded only
// by MaxMessages (or not at all) is a pipeline of GET (the system record)
// and LRANGE; a token window runs the load script, which walks the log on
// the server.
func (s *Store) Load(ctx context.Context, key memory.Key, w memory.Window) ([]memory.Record, error) {
	k := s.keys(key)
	// sys is the system entry ("" for none), log the log entries.
	var sys string
	var log []string
	var err error
	if w.MaxTokens > 0 {
		var vals []string
		vals, err = loadScript.Run(ctx, s.client, []string{k.log, k.sys}, w.MaxTokens, w.MaxMessages).StringSlice()
		if err == nil && len(vals) == 0 {
			err = errors.New("empty reply")
		}
		if err == nil {
			sys, log = vals[0], vals[1:]
		}
	} else {
		var sysCmd *redis.StringCmd
		var logCmd *redis.StringSliceCmd
		_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			sysCmd = p.Get(ctx, k.sys)
			logCmd = p.LRange(ctx, k.log, -int64(max(w.MaxMessages, 0)), -1)
			return nil
		})
		if err == redis.Nil { // no system record; the LRANGE succeeded
			err = logCmd.Err()
		}
		sys, log = sysCmd.Val(), logCmd.Val()
	}
	if err != nil {
		return nil, fail("load", key, err)
	}
	out, err := decodeWindow(sys, log)
	if err != nil {
		return nil, fail("load", key, err)
	}
	return out, nil
}

// decodeWindow decodes a window's entries: the system entry ("" for none)
// and the log's.
func decodeWindow(sys string, log []string) ([]memory.Record, error) {
	n := len(log)
	if sys != "" {
		n++
	}
	out := make([]memory.Record, 0, n)
	parts := make([]llm.Part, n) // the text parts of compact entries
	if sys != "" {
		r, err := decodeEntryIn(sys, parts[0:1:1])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	for _, e := range log {
		i := len(out)
		r, err := decodeEntryIn(e, parts[i:i+1:i+1])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Delete implements [memory.Store]: the conversation's keys, its summary
// among them, and its entries in the indexes.
func (s *Store) Delete(ctx context.Context, key memory.Key) error {
	k := s.keys(key)
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k.log, k.ids, k.sys, k.meta, k.sum)
		p.ZRem(ctx, s.tenantIndex(key.Tenant), lenPrefixed(key.Agent)+key.Session)
		p.ZRem(ctx, s.agentIndex(key.Tenant, key.Agent), key.Session)
		return nil
	})
	if err != nil {
		return fail("delete", key, err)
	}
	return nil
}

// Trim implements [memory.Trimmer]. The ids of trimmed records are
// forgotten: a later Append with one of them adds a new record.
func (s *Store) Trim(ctx context.Context, key memory.Key, before int64) error {
	k := s.keys(key)
	if err := trimScript.Run(ctx, s.client, []string{k.log, k.ids, k.meta}, before).Err(); err != nil {
		return fail("trim", key, err)
	}
	return nil
}

// List implements [memory.Lister] in two round trips: the index, then the
// conversations' meta hashes in one pipeline. Conversations that expired
// are dropped from the index on the way.
func (s *Store) List(ctx context.Context, tenant, agent string) ([]memory.SessionInfo, error) {
	idx := s.tenantIndex(tenant)
	if agent != "" {
		idx = s.agentIndex(tenant, agent)
	}
	failList := func(err error) error { return fmt.Errorf("redisstore: list %s/%s: %w", tenant, agent, err) }
	members, err := s.client.ZRange(ctx, idx, 0, -1).Result()
	if err != nil {
		return nil, failList(err)
	}
	keys := make([]memory.Key, 0, len(members))
	for _, m := range members {
		k := memory.Key{Tenant: tenant, Agent: agent, Session: m}
		if agent == "" {
			n, rest, _ := strings.Cut(m, ":")
			l, err := strconv.Atoi(n)
			if err != nil || l > len(rest) {
				return nil, failList(fmt.Errorf("malformed index member %q", m))
			}
			k.Agent, k.Session = rest[:l], rest[l:]
		}
		keys = append(keys, k)
	}
	cmds := make([]*redis.SliceCmd, len(keys))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, s.keys(k).meta, "created", "updated", "count")
		}
		return nil
	})
	if err != nil {
		return nil, failList(err)
	}
	out := make([]memory.SessionInfo, 0, len(keys))
	var gone []any
	for i, c := range cmds {
		v := c.Val()
		created, _ := v[0].(string)
		updated, _ := v[1].(string)
		count, _ := v[2].(string)
		if created == "" {
			gone = append(gone, members[i])
			continue
		}
		cr, err1 := strconv.ParseInt(created, 10, 64)
		up, err2 := strconv.ParseInt(updated, 10, 64)
		n, err3 := strconv.Atoi(count)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, failList(fmt.Errorf("malformed meta of %s: %w", keys[i], err))
		}
		out = append(out, memory.SessionInfo{Key: keys[i], CreatedAt: time.Unix(0, cr).UTC(), UpdatedAt: time.Unix(0, up).UTC(), MessageCount: n})
	}
	if len(gone) > 0 {
		if err := s.client.ZRem(ctx, idx, gone...).Err(); err != nil {
			return nil, failList(err)
		}
	}
	slices.SortFunc(out, func(a, b memory.SessionInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key.Agent+"\x00"+a.Key.Session, b.Key.Agent+"\x00"+b.Key.Session)
	})
	return out, nil
}
