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
	"github.com/weftlabs/weft/tokens"
)

// InMemory is the in-process [Store]. It also implements [Lister], [Locker],
// [TurnStore], [Trimmer] and [SummaryStore]. It is safe for concurrent use; conversations live as long
// as the InMemory value. Records go in and come out as deep copies, so a
// caller of Append and Load never shares memory with the store. (A [Chat]
// over an InMemory reads stored messages without copying them; see
// [Chat.Messages].)
//
// The zero value is not usable; call [NewInMemory].
type InMemory struct {
	mu    sync.Mutex
	convs map[Key]*conversation
	locks locks
	// Ids of records appended without one are idPrefix (random, per
	// store) followed by the hex of idSeq, a counter: unique without a
	// call to crypto/rand per record.
	idPrefix [16]byte
	idSeq    uint64
}

type conversation struct {
	sys *Record
	// log holds the records, oldest first. Their message data (parts,
	// images, tool calls) is the store's own copy and is never modified,
	// so readers inside the package may share it.
	log     []Record
	ids     map[string]int64 // client message id → Seq, for idempotent appends
	last    int64            // the last Seq assigned; survives Trim
	summary Summary
	created time.Time
	updated time.Time
}

// NewInMemory returns an empty in-process store.
func NewInMemory() *InMemory {
	m := &InMemory{convs: map[Key]*conversation{}}
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails
	hex.Encode(m.idPrefix[:], seed[:])
	return m
}

// Append implements [Store].
func (m *InMemory) Append(ctx context.Context, key Key, recs ...Record) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: append %s: %w", key.String(), err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	in := slices.Clone(recs)
	out := make([]Record, 0, len(in))
	m.add(key, in, &out)
	// The stored records share message data; the caller gets its own.
	ownMessages(out)
	return out, nil
}

// add appends recs, which add may modify (it gives them their own message
// data, ids and times), and returns the greatest Seq among them. When out
// is not nil, the records as stored are appended to it, sharing their
// message data with the store.
func (m *InMemory) add(key Key, recs []Record, out *[]Record) int64 {
	ownMessages(recs)
	now := time.Now().UTC().Round(0)

	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLocked(key, recs, out, now)
}

// addLocked is add with m.mu held and the records' messages their own.
func (m *InMemory) addLocked(key Key, recs []Record, out *[]Record, now time.Time) int64 {
	m.fillIDs(recs)
	c := m.convs[key]
	if c == nil {
		c = &conversation{ids: map[string]int64{}, created: now}
		m.convs[key] = c
	}
	last := int64(0)
	for i := range recs {
		r := &recs[i]
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if r.Message.Role == llm.RoleSystem {
			r.Seq = 0
			if c.sys == nil || c.sys.Message.Text() != r.Message.Text() {
				sys := *r
				c.sys = &sys
				c.updated = now
			}
			if out != nil {
				*out = append(*out, *c.sys)
			}
			continue
		}
		if seq, ok := c.ids[r.ID]; ok {
			if j, found := c.find(seq); found {
				last = max(last, seq)
				if out != nil {
					*out = append(*out, c.log[j])
				}
				continue
			}
		}
		c.last++
		r.Seq = c.last
		c.log = append(c.log, *r)
		c.ids[r.ID] = r.Seq
		c.updated = now
		last = r.Seq
		if out != nil {
			*out = append(*out, *r)
		}
	}
	return last
}

// fillIDs gives the records without an id a fresh one. All of them are cut
// from one string.
func (m *InMemory) fillIDs(recs []Record) {
	n := 0
	for i := range recs {
		if recs[i].ID == "" {
			n++
		}
	}
	if n == 0 {
		return
	}
	const size = len(m.idPrefix) + 16
	var stack [8 * size]byte
	var buf []byte
	if n <= 8 {
		buf = stack[:n*size]
	} else {
		buf = make([]byte, n*size)
	}
	for i := range n {
		b := buf[i*size : (i+1)*size]
		copy(b, m.idPrefix[:])
		m.idSeq++
		var seq [8]byte
		for j := range seq {
			seq[j] = byte(m.idSeq >> (56 - 8*j))
		}
		hex.Encode(b[len(m.idPrefix):], seq[:])
	}
	ids := string(buf)
	for i := range recs {
		if recs[i].ID == "" {
			recs[i].ID, ids = ids[:size], ids[size:]
		}
	}
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
	out := m.loadLocked(key, w)
	m.mu.Unlock()
	ownMessages(out)
	return out, nil
}

// loadLocked returns the records w keeps of key's conversation, sharing
// their message data with the store. m.mu is held.
func (m *InMemory) loadLocked(key Key, w Window) []Record {
	c := m.convs[key]
	if c == nil {
		return nil
	}
	start := windowStart(len(c.log), w, func(i int) int { return c.log[i].Tokens })
	n := len(c.log) - start
	if c.sys != nil {
		n++
	}
	out := make([]Record, 0, n)
	if c.sys != nil {
		out = append(out, *c.sys)
	}
	return append(out, c.log[start:]...)
}

// Begin implements [TurnStore] with the in-process lock table: the lease
// is held until End (a holder cannot die apart from its process, so there
// is nothing to renew; l.TTL does not apply). The loaded records share
// their message data with the store.
func (m *InMemory) Begin(ctx context.Context, key Key, l Lease, w Window, first []Record) (Begun, error) {
	if err := ctx.Err(); err != nil {
		return Begun{}, fmt.Errorf("memory: begin %s: %w", key.String(), err)
	}
	g, gen, err := m.locks.take(ctx, key, l.Owner)
	if err != nil {
		return Begun{}, err
	}
	var b Begun
	m.begin(key, first, func(c *conversation) error {
		if c != nil {
			b.Records = m.loadLocked(key, w)
			b.Summary = c.summary
		}
		return nil
	})
	b.End = func(ctx context.Context, recs []Record) (int64, error) {
		return m.end(key, g, gen, recs), nil
	}
	return b, nil
}

// begin runs read on key's conversation (nil when there is none) and then,
// unless read fails, appends first: both under one lock of the store, so
// that what read sees is what was there before first.
func (m *InMemory) begin(key Key, first []Record, read func(c *conversation) error) error {
	var buf [4]Record
	in := append(buf[:0], first...)
	ownMessages(in)
	now := time.Now().UTC().Round(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := read(m.convs[key]); err != nil {
		return err
	}
	if len(in) > 0 {
		m.addLocked(key, in, nil, now)
	}
	return nil
}

// beginMessages is begin for [Chat.BeginMessages]: it appends to dst the
// messages w keeps, cut exactly as [Window.Fit] cuts them and sharing
// their data with the store, without the records that have the id of one
// of first, then appends first.
func (m *InMemory) beginMessages(key Key, w Window, first []Record, dst []llm.Message) ([]llm.Message, error) {
	err := m.begin(key, first, func(c *conversation) error {
		if c == nil {
			// An empty conversation still fails a window whose Reserve
			// does not fit.
			_, err := w.start(nil, nil)
			return err
		}
		log := c.log[windowStart(len(c.log), w.storeWindow(), func(i int) int { return c.log[i].Tokens }):]
		start, err := w.start(c.sys, log)
		if err != nil {
			return err
		}
		if c.sys != nil {
			dst = append(dst, c.sys.Message)
		}
		for i := start; i < len(log); i++ {
			if !hasID(first, log[i].ID) {
				dst = append(dst, log[i].Message)
			}
		}
		return nil
	})
	return dst, err
}

// end appends a turn's last records, releases its lock (grant g, holding
// gen), and returns the greatest Seq among the records.
func (m *InMemory) end(key Key, g *grant, gen uint64, recs []Record) int64 {
	defer m.locks.end(key, g, gen)
	if len(recs) == 0 {
		return 0
	}
	var buf [8]Record
	return m.add(key, append(buf[:0], recs...), nil)
}

// LoadMessages implements [MessageStore]: the messages share their data
// with the store.
func (m *InMemory) LoadMessages(ctx context.Context, key Key, w Window, dst []llm.Message) ([]llm.Message, error) {
	if err := ctx.Err(); err != nil {
		return dst, fmt.Errorf("memory: load %s: %w", key.String(), err)
	}
	sw := w.storeWindow()
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[key]
	if c == nil {
		// An empty conversation still fails a window whose Reserve does not fit.
		_, err := w.start(nil, nil)
		return dst, err
	}
	log := c.log[windowStart(len(c.log), sw, func(i int) int { return c.log[i].Tokens }):]
	start, err := w.start(c.sys, log)
	if err != nil {
		return dst, err
	}
	log = log[start:]
	if c.sys != nil {
		dst = append(dst, c.sys.Message)
	}
	for i := range log {
		dst = append(dst, log[i].Message)
	}
	return dst, nil
}

// AppendMessages implements [MessageStore]. It needs no copy of the
// records it makes nor returns any: the records of a typical turn are
// built on the stack.
func (m *InMemory) AppendMessages(ctx context.Context, key Key, counter tokens.Counter, msgs []llm.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: append %s: %w", key.String(), err)
	}
	var buf [8]Record
	recs := buf[:0]
	if len(msgs) > len(buf) {
		recs = make([]Record, 0, len(msgs))
	}
	for _, msg := range msgs {
		recs = append(recs, Record{Message: msg, Tokens: tokens.MessageTokens(counter, msg)})
	}
	return m.add(key, recs, nil), nil
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

// LoadSummary implements [SummaryStore].
func (m *InMemory) LoadSummary(ctx context.Context, key Key) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, fmt.Errorf("memory: load the summary of %s: %w", key.String(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.convs[key]; c != nil {
		return c.summary, nil
	}
	return Summary{}, nil
}

// SaveSummary implements [SummaryStore].
func (m *InMemory) SaveSummary(ctx context.Context, key Key, s Summary, prev int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("memory: save the summary of %s: %w", key.String(), err)
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = time.Now().UTC().Round(0)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.convs[key]
	if c == nil || s.Through <= prev || c.summary.Through != prev || c.last < s.Through {
		return false, nil
	}
	c.summary = s
	return true, nil
}

// LoadRange implements [SummaryStore].
func (m *InMemory) LoadRange(ctx context.Context, key Key, after, before int64, maxTokens int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: load a range of %s: %w", key.String(), err)
	}
	m.mu.Lock()
	var out []Record
	if c := m.convs[key]; c != nil {
		i, _ := c.find(after + 1)
		sum := 0
		for ; i < len(c.log) && c.log[i].Seq < before; i++ {
			sum += c.log[i].Tokens
			if maxTokens > 0 && sum > maxTokens && len(out) > 0 {
				break
			}
			out = append(out, c.log[i])
		}
	}
	m.mu.Unlock()
	ownMessages(out)
	return out, nil
}

// Delete implements [Store].
func (m *InMemory) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: delete %s: %w", key.String(), err)
	}
	m.mu.Lock()
	delete(m.convs, key)
	m.mu.Unlock()
	m.locks.forget(key)
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
	if i == 0 {
		return nil
	}
	for _, r := range c.log[:i] {
		delete(c.ids, r.ID)
	}
	kept := len(c.log) - i
	if cap(c.log) > 4*kept+64 {
		// Most of the log went: give its memory back.
		c.log = slices.Clone(c.log[i:])
		return nil
	}
	// Compact in place: the array is reused by the next appends. Records
	// handed out earlier were copied out of it, so none is affected.
	copy(c.log, c.log[i:])
	clear(c.log[kept:])
	c.log = c.log[:kept]
	return nil
}

// Lock implements [Locker] with the in-process lock table: the lock is
// held until released or dropped (a holder cannot die apart from its
// process, so there is nothing to renew); l.TTL does not apply.
func (m *InMemory) Lock(ctx context.Context, key Key, l Lease) (release func(), err error) {
	return m.locks.lock(ctx, key, l.Owner)
}

// Drop implements [Locker].
func (m *InMemory) Drop(ctx context.Context, owner string) error {
	m.locks.drop(owner)
	return nil
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

// ownMessages gives the records' messages data of their own, shared with
// nothing: their parts (and images) and tool calls are copied, the parts
// of all records into one new array and the tool calls into another. Each
// message's slices are capped at their length, so appending to one never
// writes into its neighbour. Nil and empty slices stay nil and empty.
func ownMessages(recs []Record) {
	np, nc := 0, 0
	for i := range recs {
		np += len(recs[i].Message.Parts)
		nc += len(recs[i].Message.ToolCalls)
	}
	var parts []llm.Part
	if np > 0 {
		parts = make([]llm.Part, 0, np)
	}
	var calls []llm.ToolCall
	if nc > 0 {
		calls = make([]llm.ToolCall, 0, nc)
	}
	for i := range recs {
		m := &recs[i].Message
		if len(m.Parts) == 0 {
			m.Parts = m.Parts[:0:0]
		} else {
			start := len(parts)
			parts = append(parts, m.Parts...)
			for j := start; j < len(parts); j++ {
				if p := &parts[j]; p.Image != nil {
					img := *p.Image
					img.Data = slices.Clone(img.Data)
					p.Image = &img
				}
			}
			m.Parts = parts[start:len(parts):len(parts)]
		}
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = m.ToolCalls[:0:0]
		} else {
			start := len(calls)
			calls = append(calls, m.ToolCalls...)
			m.ToolCalls = calls[start:len(calls):len(calls)]
		}
	}
}
