package memory

import (
	"context"
	"errors"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
)

// Key names one conversation. The library's memory IDs use Session alone;
// the platform fills all three, and stores keep tenants apart by Key.
type Key struct {
	Tenant  string `json:"tenant,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session"`
}

// Record is one stored message with the facts a store keeps beside it.
type Record struct {
	// Seq is the message's position in its conversation, assigned by the
	// store on Append: 1, 2, 3, … with no gaps, one strict order even when
	// several processes append.
	Seq int64 `json:"seq"`
	// ID is the client's message id. Appending a record whose ID the
	// conversation already holds returns the stored record and adds nothing.
	// An empty ID is filled by the store with a fresh unique id.
	ID      string      `json:"id"`
	Message llm.Message `json:"message"`
	// Tokens is the message's token count, computed once when it is added so
	// that history is never re-tokenised.
	Tokens int `json:"tokens"`
	// CreatedAt is set by the store on Append when zero.
	CreatedAt time.Time `json:"created_at"`
	// Partial marks an assistant message cut short by a failed or cancelled turn.
	Partial bool `json:"partial,omitempty"`
}

// Store keeps conversations. It is the small interface every backend
// implements (in-process, SQL, Redis); optional abilities are the Lister,
// Locker, TurnStore, Trimmer, SummaryStore and MessageStore interfaces,
// found by type assertion.
//
// A conversation is an append-only log of records plus at most one system
// record. Appending a record whose message has RoleSystem does not extend the
// log: it replaces the conversation's system record (and is a no-op when the
// text is identical), so a system message is never stored twice and never
// evicted by a window.
//
// Implementations are safe for concurrent use, also across processes for the
// shared backends.
type Store interface {
	// Append adds records to the end of the conversation, in order, and
	// returns them as stored (Seq, ID and CreatedAt filled).
	Append(ctx context.Context, key Key, recs ...Record) ([]Record, error)
	// Load returns the system record first, if any, then the newest log
	// records that fit the window, oldest first. It walks from the newest
	// record back and stops at the first record that does not fit. Load
	// applies only MaxTokens and MaxMessages, record by record, and does not
	// count the system record: it returns a superset of what the window
	// keeps, which [Window.Fit] cuts exactly ([Window.Load] does both).
	Load(ctx context.Context, key Key, w Window) ([]Record, error)
	// Delete removes the conversation. Deleting an absent one is not an error.
	Delete(ctx context.Context, key Key) error
}

// SessionInfo summarises a stored conversation.
type SessionInfo struct {
	Key          Key       `json:"key"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
}

// Lister is implemented by stores that can enumerate conversations.
type Lister interface {
	// List returns the conversations of a tenant (and agent, when not empty),
	// most recently updated first.
	List(ctx context.Context, tenant, agent string) ([]SessionInfo, error)
}

// Locker is implemented by stores that serialise turns on one conversation,
// across processes for shared backends (a lease row in SQL, a lease key in
// Redis, a lock table in-process).
//
// A lock is a lease held by an owner, an id of the process (see
// [Lease.Owner]). While it is held the holder's process renews it every
// TTL/3 (a heartbeat), so a turn may run as long as it needs; when the
// holder's process dies, the heartbeat stops and the lease lapses within
// TTL. A process that starts again under the same owner calls Drop to end
// at once the leases its previous life left. In-process locks die with
// their process and need neither.
type Locker interface {
	// Lock waits until the conversation is free or ctx ends, takes its
	// lease for l.Owner, and returns the function that releases it (a
	// second call does nothing). When ctx ends first, the error matches
	// ErrLockTimeout.
	Lock(ctx context.Context, key Key, l Lease) (release func(), err error)
	// Drop ends every lease owner holds. A release by a dropped holder
	// frees nothing.
	Drop(ctx context.Context, owner string) error
}

// Lease says who takes a lock and how long it outlives a holder that stops
// renewing it.
type Lease struct {
	// Owner names the holder's process: stable across restarts of one
	// server (weft serve keeps it in its data directory), distinct between
	// processes that share a store. Empty means anonymous, which Drop
	// cannot name.
	Owner string
	// TTL is how long the lease lasts without a heartbeat; zero or less
	// means DefaultLeaseTTL.
	TTL time.Duration
	// Wait bounds how long [Chat.Begin] waits for a conversation that
	// another turn holds; zero or less waits until the caller's context
	// ends. Locker.Lock ignores it (its context is the bound).
	Wait time.Duration
}

// TurnStore is implemented by stores that hold a conversation for a turn in
// two round trips: one that takes the lease, loads the window (and the
// summary of a [SummaryStore]) and appends the turn's first records, and
// one that appends its last records and releases the lease. [Chat.Begin]
// uses it; over other stores it makes Lock, Load and Append calls instead.
type TurnStore interface {
	// Begin waits until key's conversation is free or ctx ends (the error
	// then matches ErrLockTimeout), takes its lease for l.Owner and, in the
	// same round trip, loads the records w keeps as Load does, and the
	// conversation's summary when the store is a SummaryStore, then appends
	// first as Append does: the loaded records are those before first. The
	// lease is renewed every l.TTL/3 while it is held, as a Locker's is.
	// In-process stores may return records that share their message data
	// with the store; callers treat them as read-only.
	Begin(ctx context.Context, key Key, l Lease, w Window, first []Record) (Begun, error)
}

// Begun is a conversation a [TurnStore] holds for a turn.
type Begun struct {
	// Records are the records the window keeps, as Load returns them,
	// loaded before the turn's first records were appended.
	Records []Record
	// Summary is the conversation's summary (zero for none), read in the
	// same round trip, from a store that is a SummaryStore.
	Summary Summary
	// End appends recs (none is fine) and releases the lease in one round
	// trip, and returns the greatest Seq among the appended records (0 for
	// none). Its caller waits for the append, not for the release. The
	// records are appended also when the lease lapsed meanwhile (they are
	// not lost); only a lease still this holder's is released. End is
	// called once.
	End func(ctx context.Context, recs []Record) (last int64, err error)
}

// DefaultLeaseTTL is how long a lock outlives a holder that died. Holders
// renew their leases every third of it.
const DefaultLeaseTTL = 10 * time.Second

// Trimmer is implemented by stores that can drop old records.
type Trimmer interface {
	// Trim removes the log records with Seq < before. Sequence numbers of
	// the remaining and later records are unchanged.
	Trim(ctx context.Context, key Key, before int64) error
}

// MessageStore is implemented by in-process stores that can read and add
// a conversation's messages without copying them through records: the fast
// path a [Chat] takes ([InMemory] implements it). Its results are those of
// [Window.Load] and [Store.Append].
type MessageStore interface {
	// LoadMessages appends to dst the messages that w keeps of key's
	// conversation (the messages of w.Load's records) and returns the
	// extended slice. The messages may share their parts, images and tool
	// calls with the store: callers treat them as read-only.
	LoadMessages(ctx context.Context, key Key, w Window, dst []llm.Message) ([]llm.Message, error)
	// AppendMessages appends msgs as records whose Tokens counter counts,
	// and returns the greatest Seq among them.
	AppendMessages(ctx context.Context, key Key, counter tokens.Counter, msgs []llm.Message) (last int64, err error)
}

// ErrLockTimeout is returned when a conversation stayed locked by another
// turn until the caller's deadline.
var ErrLockTimeout = errors.New("memory: conversation is busy with another turn")
