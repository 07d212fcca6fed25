package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/memory"
)

// LoadSummary implements [memory.SummaryStore] with one GET.
func (s *Store) LoadSummary(ctx context.Context, key memory.Key) (memory.Summary, error) {
	v, err := s.client.Get(ctx, s.keys(key).sum).Result()
	if errors.Is(err, redis.Nil) {
		return memory.Summary{}, nil
	}
	var sum memory.Summary
	if err == nil {
		sum, err = decodeSummary(v)
	}
	if err != nil {
		return memory.Summary{}, fail("load the summary of", key, err)
	}
	return sum, nil
}

// SaveSummary implements [memory.SummaryStore] with one script, which
// compares and sets the summary while the conversation exists; the summary
// lives as long as the conversation's other keys.
func (s *Store) SaveSummary(ctx context.Context, key memory.Key, sum memory.Summary, prev int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fail("save the summary of", key, err)
	}
	if sum.Through <= prev {
		return false, nil
	}
	if sum.UpdatedAt.IsZero() {
		sum.UpdatedAt = time.Now().UTC().Round(0)
	}
	k := s.keys(key)
	n, err := summaryScript.Run(ctx, s.client, []string{k.meta, k.sum}, prev, sum.Through, sum.Tokens, sum.UpdatedAt.UnixNano(), sum.Text).Int()
	if err != nil {
		return false, fail("save the summary of", key, err)
	}
	return n == 1, nil
}

// LoadRange implements [memory.SummaryStore] with one script, which finds
// the range's entries by their position in the log.
func (s *Store) LoadRange(ctx context.Context, key memory.Key, after, before int64, maxTokens int) ([]memory.Record, error) {
	k := s.keys(key)
	vals, err := rangeScript.Run(ctx, s.client, []string{k.log, k.meta}, after, before, max(maxTokens, 0)).StringSlice()
	if err != nil {
		return nil, fail("load a range of", key, err)
	}
	out, err := decodeWindow("", vals)
	if err != nil {
		return nil, fail("load a range of", key, err)
	}
	return out, nil
}

// decodeSummary decodes "<through>|<tokens>|<updated>|<text>"; "" is no
// summary.
func decodeSummary(v string) (memory.Summary, error) {
	if v == "" {
		return memory.Summary{}, nil
	}
	f := strings.SplitN(v, "|", 4)
	if len(f) != 4 {
		return memory.Summary{}, fmt.Errorf("malformed summary %.40q", v)
	}
	through, err1 := strconv.ParseInt(f[0], 10, 64)
	tokens, err2 := strconv.Atoi(f[1])
	at, err3 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return memory.Summary{}, fmt.Errorf("malformed summary %.40q: %w", v, err)
	}
	return memory.Summary{Text: f[3], Through: through, Tokens: tokens, UpdatedAt: time.Unix(0, at).UTC()}, nil
}
