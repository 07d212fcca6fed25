package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/internal/lease"
)

var _ memory.TurnStore = (*Store)(nil)

// Begin implements [memory.TurnStore] in one round trip: a pipeline of the
// begin script, which takes the lease (SET NX PX, as Lock does), loads the
// window (any window: the script walks a token window, and reads a message
// window with one LRANGE) and the summary, and appends first, and of the updates of the
// owner's set (for Drop) and the conversation indexes (for List), which
// live in other slots. While another holder has the lease the script
// changes nothing, and Begin tries again with Lock's backoff. The lease is
// renewed by a heartbeat until end, which is one round trip too: the end
// script appends the last records and deletes the lease if it still holds
// this holder's token. With no records to append, end does not wait for
// the release.
func (s *Store) Begin(ctx context.Context, key memory.Key, l memory.Lease, w memory.Window, first []memory.Record) (memory.Begun, error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = memory.DefaultLeaseTTL
	}
	k := s.keys(key)
	ks := []string{k.log, k.ids, k.sys, k.meta, k.lock, k.sum}
	token := lease.Token(l.Owner)
	owned := l.Owner != ""
	owners := s.ownerKey(l.Owner)
	now := time.Now().UTC().Round(0)
	args := make([]any, 0, 6+5*len(first))
	args = append(args, token, ttl.Milliseconds(), max(w.MaxTokens, 0), max(w.MaxMessages, 0), s.ttl.Milliseconds(), now.UnixNano())
	args, err := encodeRecords(args, first, now, nil)
	if err != nil {
		return memory.Begun{}, fail("begin", key, err)
	}
	var vals []string
	err = lease.Acquire(ctx, &s.wakeups, k.lock, func() (bool, error) {
		res, err := s.run(ctx, beginScript, ks, args, func(p redis.Pipeliner) {
			if owned {
				// Best effort, as in Lock: a key added by an attempt that
				// lost is harmless.
				p.SAdd(ctx, owners, k.lock)
			}
			if len(first) > 0 {
				s.index(ctx, p, key, now)
			}
		})
		if err != nil {
			return false, err
		}
		if n, ok := res.Val().(int64); ok && n == 0 {
			return false, nil // busy
		}
		vals, err = res.StringSlice()
		if err == nil && len(vals) < 2 {
			err = fmt.Errorf("unexpected reply %v", res.Val())
		}
		return err == nil, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return memory.Begun{}, fmt.Errorf("%w: %s: %w", memory.ErrLockTimeout, key, ctx.Err())
		}
		return memory.Begun{}, fail("begin", key, err)
	}
	var b memory.Begun
	b.Records, err = decodeWindow(vals[0], vals[2:])
	if err == nil {
		b.Summary, err = decodeSummary(vals[1])
	}
	if err != nil {
		// The lease is ours: release it rather than make the next turn wait.
		s.release(k.lock, token, owners, owned)
		return memory.Begun{}, fail("begin", key, err)
	}
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	stop := lease.Keep(ttl, func(ctx context.Context) (bool, error) {
		n, err := renewScript.Run(ctx, s.client, []string{k.lock}, token, ms).Int()
		return n == 1, err
	})
	b.End = func(ctx context.Context, recs []memory.Record) (int64, error) {
		stop()
		if len(recs) == 0 {
			s.release(k.lock, token, owners, owned)
			return 0, nil
		}
		last, err := s.end(ctx, key, ks, token, owners, owned, recs)
		if err != nil {
			// The lease may still be ours: release it apart (a no-op when
			// the script ran); otherwise it lapses after its TTL.
			s.release(k.lock, token, owners, owned)
			return 0, fail("end", key, err)
		}
		s.wakeups.Wake(k.lock)
		return last, nil
	}
	return b, nil
}

// end runs the end script: recs appended and the lease released, one round
// trip. It returns the greatest Seq among the appended records.
func (s *Store) end(ctx context.Context, key memory.Key, ks []string, token, owners string, owned bool, recs []memory.Record) (int64, error) {
	now := time.Now().UTC().Round(0)
	args := make([]any, 0, 3+5*len(recs))
	args = append(args, token, s.ttl.Milliseconds(), now.UnixNano())
	args, err := encodeRecords(args, recs, now, nil)
	if err != nil {
		return 0, err
	}
	res, err := s.run(ctx, endScript, ks, args, func(p redis.Pipeliner) {
		if owned {
			p.SRem(ctx, owners, ks[4])
		}
		s.index(ctx, p, key, now)
	})
	if err != nil {
		return 0, err
	}
	vals, err := res.Slice()
	if err != nil || len(vals) != len(recs) {
		return 0, fmt.Errorf("unexpected reply %v: %v", res.Val(), err)
	}
	last := int64(0)
	for _, v := range vals {
		switch v := v.(type) {
		case int64:
			last = max(last, v)
		case string: // a record stored before: "<tokens>|<seq>|…"
			_, rest, _ := strings.Cut(v, "|")
			seq, _, _ := strings.Cut(rest, "|")
			n, err := strconv.ParseInt(seq, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("malformed entry %.40q", v)
			}
			last = max(last, n)
		}
	}
	return last, nil
}
