package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/facts/sqlfacts"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
)

// Memory beyond the window (docs/memory.md): an agent's memory setting
// (meta.Memory) made into the library's pieces — a running summarizer per
// agent version, and long-term memory of the tenant's end users over the
// metadata store's facts (SQLite, or PostgreSQL with pgvector).

// Bounds of an agent's memory setting.
const (
	minSummaryThreshold = 64
	maxSummaryThreshold = 1 << 20
	maxSummaryPrompt    = 16 << 10
	maxSummaryTokens    = 8192
	maxRecallTokens     = 8192
	// maxUserBytes bounds an end user's id (the chat request's user).
	maxUserBytes = 256
	// learnTimeout bounds one background extraction after a turn.
	learnTimeout = 2 * time.Minute
)

// factStoreOpener is a metadata store that keeps long-term memory
// (meta.SQL: SQLite, or PostgreSQL with pgvector).
type factStoreOpener interface {
	FactStore(ctx context.Context) (facts.Store, error)
}

// memories holds the summarizers of agents' versions and the background
// extractions, which Close ends.
type memories struct {
	mu          sync.Mutex
	summarizers map[string]versionedSummarizer // by tenant and agent id
	closed      bool
	learning    sync.WaitGroup
	ctx         context.Context // cancelled by close: extractions in flight stop
	cancel      context.CancelFunc
	// scopes are the extractions in flight per end user, which forgetting
	// the user cancels and waits for.
	scopes map[facts.Scope]*scopeLearning
}

type scopeLearning struct {
	wg      sync.WaitGroup
	cancels map[*context.CancelFunc]bool
}

type versionedSummarizer struct {
	version time.Time // the agent's UpdatedAt
	spec    meta.SummarySetting
	s       *memory.Summarizer
}

func newMemories() *memories {
	ctx, cancel := context.WithCancel(context.Background())
	return &memories{summarizers: map[string]versionedSummarizer{}, ctx: ctx, cancel: cancel, scopes: map[facts.Scope]*scopeLearning{}}
}

// close closes every summarizer (cancelling folds in flight) and waits for
// the background extractions, which it cancels.
func (m *memories) close() {
	m.mu.Lock()
	m.closed = true
	sums := m.summarizers
	m.summarizers = map[string]versionedSummarizer{}
	m.mu.Unlock()
	m.cancel()
	for _, v := range sums {
		v.s.Close()
	}
	m.learning.Wait()
}

// summarizerFor returns the running summarizer of agent's version, made on
// first use, or nil when the agent keeps no summary (or its model cannot
// be opened: the turn keeps the plain window, and the log says why). A
// new version of the agent replaces the previous version's summarizer,
// which finishes its folds in flight and is closed.
func (s *Server) summarizerFor(agent meta.Agent) *memory.Summarizer {
	if agent.Memory == nil || agent.Memory.Summary == nil {
		return nil
	}
	spec := *agent.Memory.Summary
	key := agent.TenantID + "\x00" + agent.ID
	m := s.memories
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	cur, ok := m.summarizers[key]
	if ok && cur.version.Equal(agent.UpdatedAt) {
		return cur.s
	}
	if ok && cur.version.After(agent.UpdatedAt) {
		return cur.s // an older version read from a cache: the newer one serves
	}
	if ok && cur.spec == spec {
		cur.version = agent.UpdatedAt // another field of the agent changed
		m.summarizers[key] = cur
		return cur.s
	}
	model, err := s.model(cmp.Or(spec.Model, agent.Model))
	if err != nil {
		s.log.Warn("agent memory: summary model not opened; the plain window is kept", "agent", agent.ID, "model", cmp.Or(spec.Model, agent.Model), "err", err)
		return nil
	}
	opts := []memory.SummaryOption{memory.OnSummary(func(ev memory.SummaryEvent) {
		if ev.Err != nil {
			s.log.Warn("session summary not saved", "tenant", ev.Key.Tenant, "session", ev.Key.Session, "err", ev.Err)
			return
		}
		s.log.Debug("session summary saved", "tenant", ev.Key.Tenant, "session", ev.Key.Session, "folded", ev.Folded)
	})}
	if spec.ThresholdTokens > 0 {
		opts = append(opts, memory.SummaryThreshold(spec.ThresholdTokens))
	}
	if spec.Prompt != "" {
		opts = append(opts, memory.SummaryPrompt(spec.Prompt))
	}
	if spec.MaxTokens > 0 {
		opts = append(opts, memory.SummaryMaxTokens(spec.MaxTokens))
	}
	sum := memory.NewSummarizer(model, opts...)
	if ok {
		old := cur.s
		go func() { old.Wait(); old.Close() }()
	}
	m.summarizers[key] = versionedSummarizer{version: agent.UpdatedAt, spec: spec, s: sum}
	return sum
}

// errNoFactStore: the metadata store keeps no long-term memory.
var errNoFactStore = errors.New("the metadata store keeps no long-term memory")

// factStore returns the server's long-term memory store: the metadata
// store's, or an error saying why there is none.
func (s *Server) factStore(ctx context.Context) (facts.Store, error) {
	o, ok := s.meta.(factStoreOpener)
	if !ok {
		return nil, fmt.Errorf("platform: %w", errNoFactStore)
	}
	return o.FactStore(ctx)
}

// factsFor returns the long-term memory of agent's end users — the
// tenant's facts, learned by the agent's memory model (or its own) and
// embedded by its embedding model (or the server's default) — or nil, nil
// when the agent's setting has none.
func (s *Server) factsFor(agent meta.Agent) (*facts.Memory, error) {
	if agent.Memory == nil || !agent.Memory.LongTerm {
		return nil, nil
	}
	store, err := s.factStore(context.Background())
	if err != nil {
		return nil, err
	}
	embedder, err := s.factEmbedder(agent.Memory.EmbeddingModel)
	if err != nil {
		return nil, err
	}
	model, err := s.model(cmp.Or(agent.Memory.Model, agent.Model))
	if err != nil {
		return nil, fmt.Errorf("memory model: %w", err)
	}
	return facts.New(store, embedder, facts.WithExtractor(facts.NewExtractor(model))), nil
}

// factEmbedder returns the embedder of spec, or of the server's default
// embedding model when spec is empty.
func (s *Server) factEmbedder(spec string) (rag.Embedder, error) {
	spec = cmp.Or(spec, s.cfg.DefaultEmbeddingModel)
	if spec == "" {
		return nil, errors.New("no embedding model: name memory.embedding_model or configure the server's default embedding model")
	}
	m, err := s.model(spec)
	if err != nil {
		return nil, fmt.Errorf("embedding model %s: %w", spec, err)
	}
	return rag.NewModelEmbedder(m)
}

// learnAfter learns, in the background, what a finished turn of agent
// taught about its end user (msgs: the turn's user message and answer),
// with the turn's session and answer id as the facts' source. It never
// holds the turn up; a failure is logged. Close cancels it and waits.
func (s *Server) learnAfter(mem *facts.Memory, agent meta.Agent, user, session, message string, msgs []llm.Message) {
	if mem == nil || user == "" {
		return
	}
	m := s.memories
	scope := facts.Scope{Tenant: agent.TenantID, User: user}
	ctx, cancel := context.WithTimeout(m.ctx, learnTimeout)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		cancel()
		return
	}
	m.learning.Add(1)
	sl := m.scopes[scope]
	if sl == nil {
		sl = &scopeLearning{cancels: map[*context.CancelFunc]bool{}}
		m.scopes[scope] = sl
	}
	sl.wg.Add(1)
	sl.cancels[&cancel] = true
	m.mu.Unlock()
	go func() {
		defer func() {
			m.mu.Lock()
			delete(sl.cancels, &cancel)
			if len(sl.cancels) == 0 && m.scopes[scope] == sl {
				delete(m.scopes, scope)
			}
			m.mu.Unlock()
			cancel()
			sl.wg.Done()
			m.learning.Done()
		}()
		ch, err := mem.Learn(ctx, scope, msgs, facts.Source{Kind: facts.SourceExtraction, Agent: agent.ID, Session: session, Message: message})
		if err != nil {
			s.log.Warn("long-term memory: nothing learned from the turn", "tenant", agent.TenantID, "agent", agent.ID, "session", session, "err", err)
			return
		}
		s.log.Debug("long-term memory learned", "tenant", agent.TenantID, "session", session,
			"added", len(ch.Added), "updated", len(ch.Updated), "deleted", len(ch.Deleted))
	}()
}

// stopLearning cancels the extractions in flight for scope and waits for
// them to end, so that none stores a fact after the user is forgotten.
func (m *memories) stopLearning(scope facts.Scope) {
	m.mu.Lock()
	sl := m.scopes[scope]
	if sl != nil {
		for c := range sl.cancels {
			(*c)()
		}
	}
	m.mu.Unlock()
	if sl != nil {
		sl.wg.Wait()
	}
}

// checkUser checks an end user's id as requests name it.
func checkUser(field, user string) *apiError {
	switch {
	case len(user) > maxUserBytes:
		return invalid("field %q: at most %d bytes", field, maxUserBytes)
	case !utf8.ValidString(user) || strings.ContainsRune(user, 0):
		return invalid("field %q: not valid UTF-8 text", field)
	}
	return nil
}

// validateMemory checks an agent's memory setting, naming the first bad
// field; a model it names must be one the server knows.
func (s *Server) validateMemory(a *meta.Agent) *apiError {
	m := a.Memory
	if m == nil {
		return nil
	}
	checkModel := func(field, spec string) *apiError {
		if _, alias := s.cfg.ModelAliases[spec]; spec == "" || alias {
			return nil
		}
		return checkModelSpec(field, spec)
	}
	if sum := m.Summary; sum != nil {
		switch {
		case sum.ThresholdTokens != 0 && (sum.ThresholdTokens < minSummaryThreshold || sum.ThresholdTokens > maxSummaryThreshold):
			return invalid("field \"memory.summary.threshold_tokens\": want %d to %d (0: the default, 1024)", minSummaryThreshold, maxSummaryThreshold)
		case sum.MaxTokens < 0 || sum.MaxTokens > maxSummaryTokens:
			return invalid("field \"memory.summary.max_tokens\": want 1 to %d (0: the default, 512)", maxSummaryTokens)
		case len(sum.Prompt) > maxSummaryPrompt:
			return invalid("field \"memory.summary.prompt\": at most %d bytes", maxSummaryPrompt)
		}
		if e := checkModel("memory.summary.model", sum.Model); e != nil {
			return e
		}
	}
	switch {
	case m.RecallTokens < 0 || m.RecallTokens > maxRecallTokens:
		return invalid("field \"memory.recall_tokens\": want 1 to %d (0: the default, %d)", maxRecallTokens, meta.DefaultRecallTokens)
	case m.Tools && !m.LongTerm:
		return invalid("field \"memory.tools\": the memory tools need \"memory.long_term\": true")
	}
	if e := checkModel("memory.model", m.Model); e != nil {
		return e
	}
	if e := checkModel("memory.embedding_model", m.EmbeddingModel); e != nil {
		return e
	}
	if m.LongTerm {
		if m.EmbeddingModel == "" && s.cfg.DefaultEmbeddingModel == "" {
			return invalid("field \"memory.embedding_model\": long-term memory needs an embedding model, and the server has no default one")
		}
		if _, err := s.factStore(context.Background()); err != nil {
			switch {
			case errors.Is(err, sqlfacts.ErrNoPgvector):
				return invalid("field \"memory.long_term\": this server cannot keep long-term memory: its PostgreSQL has no pgvector")
			case errors.Is(err, errNoFactStore):
				return invalid("field \"memory.long_term\": this server cannot keep long-term memory: %v", errNoFactStore)
			}
			return asAPIError(err)
		}
	}
	return nil
}
