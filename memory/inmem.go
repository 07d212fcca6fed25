package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
)

// DefaultLockTTL is the lease a Locker grants when Lock is called with a
// ttl of zero or less.
const DefaultLockTTL = 30 * time.Second

// InMemory is the in-process [Store]. It also implements [Lister], [Locker]
// and [Trimmer]. It is safe for concurrent use; conversations live as long
// as the InMemory value. Records go in and come out as deep copies, so a
// caller never shares memory with the store.
//
// The zero value is not usable; call [NewInMemory].
type InMemory struct {
	mu    sync.Mutex
	convs map[Key]*conversation
	locks map[Key]*lease
}

type conversation struct {
	sys     *Record
	log     []Record
	ids     map[string]int64 // client message id → Seq, for idempotent appends
	last    int64            // the last Seq assigned; survives Trim
	created time.Time
	updated time.Time
}

// lease is one holder of a conversation's lock. done is closed exactly once:
// when the holder releases it or when a waiter takes over the expired lease.
type lease struct {
	expires time.Time
	done    chan struct{}
}

// NewInMemory returns an empty in-process store.
func NewInMemory() *InMemory {
	return &InMemory{convs: map[Key]*conversation{}, locks: map[Key]*lease{}}
}

// Append implements [Store].
func (m *InMemory) Append(ctx context.Context, key Key, recs ...Record) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: append %s: %w", key.String(), err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	// Ids and copies are made before taking the lock.
	in := make([]Record, len(recs))
	now := time.Now().UTC().Round(0)
	for i, r := range recs {
		r.Message = cloneMessage(r.Message)
		if r.ID == "" {
			r.ID = NewID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		in[i] = r
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[key]
	if c == nil {
		c = &conversation{ids: map[string]int64{}, created: now}
		m.convs[key] = c
	}
	out := make([]Record, 0, len(in))
	for _, r := range in {
		if r.Message.Role == llm.RoleSystem {
			r.Seq = 0
			if c.sys == nil || c.sys.Message.Text() != r.Message.Text() {
				c.sys = &r
				c.updated = now
			}
			out = append(out, cloneRecord(*c.sys))
			continue
		}
		if seq, ok := c.ids[r.ID]; ok {
			if i, found := c.find(seq); found {
				out = append(out, cloneRecord(c.log[i]))
				continue
			}
		}
		c.last++
		r.Seq = c.last
		c.log = append(c.log, r)
		c.ids[r.ID] = r.Seq
		c.updated = now
		out = append(out, cloneRecord(r))
	}
	return out, nil
}

// find returns the index in the log of the record with the given Seq.
func (c *conversation) find(seq int64) (int, bool) {
	return sort.Find(len(c.log), func(i int) int {
		switch {
		case seq < c.log[i].Seq:
			return -1
		case seq > c.log[i].Seq:
			return 1
		}
		return 0
	})
}

// Load implements [Store].
func (m *InMemory) Load(ctx context.Context, key Key, w Window) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: load %s: %w", key.String(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[key]
	if c == nil {
		return nil, nil
	}
	start := windowStart(len(c.log), w, func(i int) int { return c.log[i].Tokens })
	n := len(c.log) - start
	if c.sys != nil {
		n++
	}
	out := make([]Record, 0, n)
	if c.sys != nil {
		out = append(out, cloneRecord(*c.sys))
	}
	for _, r := range c.log[start:] {
		out = append(out, cloneRecord(r))
	}
	return out, nil
}

// windowStart returns the index of the oldest of n log records (oldest
// first) that w keeps: walking from the newest record back, records are kept
// while the sum of their tokens stays within w.MaxTokens and their count
// within w.MaxMessages; the walk stops at the first record that does not fit.
func windowStart(n int, w Window, tokens func(i int) int) int {
	start, sum := n, 0
	for start > 0 {
		if w.MaxMessages > 0 && n-start >= w.MaxMessages {
			break
		}
		if w.MaxTokens > 0 {
			t := tokens(start - 1)
			if sum+t > w.MaxTokens {
				break
			}
			sum += t
		}
		start--
	}
	return start
}

// Delete implements [Store].
func (m *InMemory) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: delete %s: %w", key.String(), err)
	}
	m.mu.Lock()
	delete(m.convs, key)
	m.mu.Unlock()
	return nil
}

// List implements [Lister].
func (m *InMemory) List(ctx context.Context, tenant, agent string) ([]SessionInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list %s/%s: %w", tenant, agent, err)
	}
	m.mu.Lock()
	var out []SessionInfo
	for k, c := range m.convs {
		if k.Tenant != tenant || (agent != "" && k.Agent != agent) {
			continue
		}
		out = append(out, SessionInfo{Key: k, CreatedAt: c.created, UpdatedAt: c.updated, MessageCount: len(c.log)})
	}
	m.mu.Unlock()
	sortSessions(out)
	return out, nil
}

// sortSessions orders sessions most recently updated first, breaking ties by
// key so that the order is stable.
func sortSessions(s []SessionInfo) {
	slices.SortFunc(s, func(a, b SessionInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return compareKeys(a.Key, b.Key)
	})
}

func compareKeys(a, b Key) int {
	for _, p := range [][2]string{{a.Tenant, b.Tenant}, {a.Agent, b.Agent}, {a.Session, b.Session}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Trim implements [Trimmer]. The ids of trimmed records are forgotten: a
// later Append with one of them adds a new record.
func (m *InMemory) Trim(ctx context.Context, key Key, before int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: trim %s: %w", key.String(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[key]
	if c == nil {
		return nil
	}
	i, _ := c.find(before)
	for _, r := range c.log[:i] {
		delete(c.ids, r.ID)
	}
	c.log = slices.Clone(c.log[i:])
	return nil
}

// Lock implements [Locker]. A holder that never calls release loses the
// lock after ttl (DefaultLockTTL when ttl ≤ 0); its late release is then a
// no-op and cannot free the next holder's lock.
func (m *InMemory) Lock(ctx context.Context, key Key, ttl time.Duration) (release func(), err error) {
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	for {
		m.mu.Lock()
		now := time.Now()
		cur := m.locks[key]
		if cur != nil && !now.Before(cur.expires) {
			close(cur.done) // the holder died or overran: take over
			cur = nil
		}
		if cur == nil {
			l := &lease{expires: now.Add(ttl), done: make(chan struct{})}
			m.locks[key] = l
			m.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					m.mu.Lock()
					if m.locks[key] == l {
						delete(m.locks, key)
						close(l.done)
					}
					m.mu.Unlock()
				})
			}, nil
		}
		wait := time.Until(cur.expires)
		m.mu.Unlock()

		timer := time.NewTimer(wait)
		select {
		case <-cur.done:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%w: %s: %w", ErrLockTimeout, key.String(), ctx.Err())
		}
		timer.Stop()
	}
}

// String renders the key as "tenant/agent/session", the form stores use in
// error messages.
func (k Key) String() string {
	return k.Tenant + "/" + k.Agent + "/" + k.Session
}

// NewID returns a fresh random message id (128 bits, hex), the id stores
// give a record appended without one.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// cloneMessage returns a deep copy of m: its parts, images and tool calls
// share no memory with m.
func cloneMessage(m llm.Message) llm.Message {
	if m.Parts != nil {
		parts := make([]llm.Part, len(m.Parts))
		for i, p := range m.Parts {
			if p.Image != nil {
				img := *p.Image
				img.Data = slices.Clone(img.Data)
				p.Image = &img
			}
			parts[i] = p
		}
		m.Parts = parts
	}
	m.ToolCalls = slices.Clone(m.ToolCalls)
	return m
}

func cloneRecord(r Record) Record {
	r.Message = cloneMessage(r.Message)
	return r
}
