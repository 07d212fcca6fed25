package memory

import (
	"context"
	"time"
)

// Summary is a conversation's running summary: the records that slid out
// of its window, folded by a model (see [Summarizer]) so that what they
// said is not lost. It is kept with the conversation by a [SummaryStore]
// and sent after the system prompt ([Summary.SystemContext]).
type Summary struct {
	// Text is the summary as the model wrote it.
	Text string `json:"text"`
	// Through is the Seq of the newest record folded into the summary: the
	// log records up to it are in Text, and a window leaves them out.
	Through int64 `json:"through"`
	// Tokens is what the summary adds to a request's system message, as
	// the chat's counter counted it when the summary was written.
	Tokens int `json:"tokens"`
	// UpdatedAt is when the summary was written; set by the store when
	// zero.
	UpdatedAt time.Time `json:"updated_at"`
}

// SystemContext returns the system message a turn sends: system followed
// by the summary, in a block delimited so that the model reads it as
// context rather than instructions. Without a summary it is system; without
// a system prompt, the block alone.
func (s Summary) SystemContext(system string) string {
	c := s.context()
	switch {
	case c == "":
		return system
	case system == "":
		return c
	}
	return system + "\n\n" + c
}

// context renders the summary's block, "" for a summary without text.
func (s Summary) context() string {
	if s.Text == "" {
		return ""
	}
	return "<conversation_summary>\nA summary of the earlier part of this conversation, whose messages are no longer shown:\n" +
		s.Text + "\n</conversation_summary>"
}

// SummaryStore is implemented by stores that keep a running summary beside
// each conversation ([InMemory], sqlstore, redisstore). Delete removes a
// conversation's summary with it; Trim keeps it. A [TurnStore] that is a
// SummaryStore reads the summary in Begin's round trip.
type SummaryStore interface {
	// LoadSummary returns key's summary, the zero Summary when it has none.
	LoadSummary(ctx context.Context, key Key) (Summary, error)
	// SaveSummary replaces key's summary with s if the stored summary's
	// Through is prev (0 for none) and reports whether it did: a
	// compare-and-set, so that of several processes folding the same
	// records one wins and the records are folded once. It stores nothing
	// and reports false when s.Through is not above prev, when the
	// conversation does not exist (a fold that ends after a Delete leaves
	// nothing behind) or when its last Seq is below s.Through. A zero
	// UpdatedAt is set to the time of the save.
	SaveSummary(ctx context.Context, key Key, s Summary, prev int64) (bool, error)
	// LoadRange returns the log records with after < Seq < before, oldest
	// first. With maxTokens > 0 it stops before the first record that
	// would bring their tokens above maxTokens, but returns at least one
	// record when there is one.
	LoadRange(ctx context.Context, key Key, after, before int64, maxTokens int) ([]Record, error)
}
