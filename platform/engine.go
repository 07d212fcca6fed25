package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
	"github.com/weftlabs/weft/tool"
)

// agentEngine is the ai pipeline configured from one version of an agent.
type agentEngine struct {
	eng   *ai.Engine
	specs []llm.ToolSpec
	// recalls reports that the engine recalls from the agent's knowledge
	// bases (its turns carry their observer for knowledgeAugmentor).
	recalls bool
	// chat are the options of the sessions' memory.Chat (see sessionChat),
	// made once per engine.
	chat []memory.ChatOption
	// facts is the agent's long-term memory of its users, learned after
	// each turn; nil when its memory setting has none (memory.go).
	facts *facts.Memory
}

// engines caches agent engines by agent version (id and update time).
type engines struct {
	mu sync.Mutex
	m  map[string]engineEntry
}

type engineEntry struct {
	version time.Time
	model   *llm.Model
	e       *agentEngine
}

// engineFor returns the engine of the agent's current version. Engines of
// agents with tools or delegates are built per turn (their tool set depends
// on the turn's depth and session); plain agents share one.
func (s *Server) engineFor(ctx context.Context, agent meta.Agent, model *llm.Model, in turnInput) (*agentEngine, error) {
	tools, err := s.agentTools(ctx, agent, in)
	if err != nil {
		return nil, err
	}
	if len(tools) == 0 {
		key := agent.TenantID + "\x00" + agent.ID
		s.engines.mu.Lock()
		if s.engines.m == nil {
			s.engines.m = map[string]engineEntry{}
		}
		ent, ok := s.engines.m[key]
		s.engines.mu.Unlock()
		if ok && ent.version.Equal(agent.UpdatedAt) && ent.model == model {
			return ent.e, nil
		}
		e, err := s.buildEngine(agent, model, nil)
		if err != nil {
			return nil, err
		}
		s.engines.mu.Lock()
		s.engines.m[key] = engineEntry{version: agent.UpdatedAt, model: model, e: e}
		s.engines.mu.Unlock()
		return e, nil
	}
	return s.buildEngine(agent, model, tools)
}

func (s *Server) buildEngine(agent meta.Agent, model *llm.Model, tools []tool.Tool) (*agentEngine, error) {
	opts := []ai.Option{ai.Defaults(agentParams(agent))}
	// Long-term memory (the agent's memory setting): the user's facts
	// recalled after the system prompt, as sources; the memory tools.
	mem, err := s.factsFor(agent)
	if err != nil {
		// A store or model that cannot be had degrades to no memory.
		s.log.Warn("agent memory: long-term memory unavailable; the turn runs without it", "agent", agent.ID, "err", err)
	}
	if mem != nil {
		opts = append(opts, ai.RecallFacts(mem, agent.TenantID, cmp.Or(agent.Memory.RecallTokens, meta.DefaultRecallTokens)))
		if agent.Memory.Tools {
			tools = append(slices.Clip(tools), mem.Tools(agent.TenantID)...)
		}
	}
	var specs []llm.ToolSpec
	if len(tools) > 0 {
		opts = append(opts, ai.Tools(tools...), ai.MaxToolRounds(max(agent.MaxToolRounds, 1)))
		for _, t := range tools {
			specs = append(specs, t.Spec())
		}
	}
	if len(agent.ToolApprovals) > 0 {
		a, err := approver(agent.ToolApprovals)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, CodeInternal, "agent %q: tool_approvals: %v", agent.Name, err)
		}
		opts = append(opts, ai.Approval(a))
	}
	recalls := len(agent.KnowledgeBaseIDs) > 0 && s.knowledge != nil
	if recalls {
		// Retrieval is an enhancement: a failed recall answers without
		// context (the turn's trace and log say why).
		opts = append(opts, ai.Augmentor(&knowledgeAugmentor{k: s.knowledge, agent: agent}, false))
	}
	eng, err := ai.NewEngine(agentModel(agent, model), opts...)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, CodeInternal, "agent %q: %v", agent.Name, err)
	}
	// The sessions' memory: the model's counter, the server's lease (its
	// instance names it, so that a restart drops what a crash left), and
	// every record kept so that a session can still be listed whole.
	chat := []memory.ChatOption{memory.WithCounter(tokens.ForModel(model.Name())),
		memory.WithLease(memory.Lease{Owner: s.cfg.Instance, Wait: s.lockWait()}), memory.KeepAll()}
	if _, ok := s.sessions.(memory.SummaryStore); ok {
		if sum := s.summarizerFor(agent); sum != nil {
			chat = append(chat, memory.WithSummary(sum))
		}
	}
	return &agentEngine{eng: eng, specs: specs, recalls: recalls, chat: chat, facts: mem}, nil
}

// agentModel is model with the agent's stall timeouts. (Its turn deadline
// bounds the turn's context; see runTurn.) The first-token limit bounds
// each model call as a whole — its retries included — rather than each
// attempt: llm retries a stalled attempt, so a per-attempt limit of 5 s
// with two retries let a model that never answers hold a turn for three
// limits and the backoff between them (a turn_ms of 15 s ended it first).
func agentModel(a meta.Agent, model *llm.Model) llm.ChatModel {
	t := a.Timeouts
	t.Defaults()
	m := model.With(llm.WithStallTimeouts(0, time.Duration(t.IdleMS)*time.Millisecond))
	if t.FirstTokenMS <= 0 {
		return m
	}
	return &firstTokenModel{Model: m, limit: time.Duration(t.FirstTokenMS) * time.Millisecond}
}

// firstTokenModel is a model whose streams end with an llm.ErrTimeout
// error when no content (text, reasoning or a tool call) has come within
// limit of the call's start, however many attempts the model made.
type firstTokenModel struct {
	*llm.Model
	limit time.Duration
}

// firstTokenTimeout ends a call whose first token is late.
type firstTokenTimeout struct{ limit time.Duration }

func (e *firstTokenTimeout) Error() string {
	return fmt.Sprintf("no first token within %v (the agent's timeouts.first_token_ms)", e.limit)
}

// Stream streams m's answer, ended when its first content is late.
func (m *firstTokenModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var mu sync.Mutex
		started := false // under mu, for the timer
		begun := false   // started, as this goroutine knows it
		timer := time.AfterFunc(m.limit, func() {
			mu.Lock()
			defer mu.Unlock()
			if !started {
				cancel(&firstTokenTimeout{m.limit})
			}
		})
		defer timer.Stop()
		for c, err := range m.Model.Stream(ctx, req) {
			if err != nil {
				var late *firstTokenTimeout
				if errors.As(context.Cause(ctx), &late) {
					err = &llm.Error{Kind: llm.ErrTimeout, Message: late.Error()}
				}
				yield(c, err)
				return
			}
			if !begun && c.Type != llm.ChunkMeta {
				begun = true
				mu.Lock()
				started = true
				mu.Unlock()
				timer.Stop()
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

func agentParams(a meta.Agent) ai.Params {
	p := ai.Params{Temperature: a.Temperature}
	if a.MaxTokens != nil {
		p.MaxTokens = *a.MaxTokens
	}
	return p
}

// knowledgeAugmentor recalls from an agent's knowledge bases for the
// engine, and records the recall in the trace of the turn (the observer
// the turn put in its context).
type knowledgeAugmentor struct {
	k     knowledgeService
	agent meta.Agent
}

// observerKey carries a turn's observer to its knowledge recall.
type observerKey struct{}

func (a *knowledgeAugmentor) Augment(ctx context.Context, q rag.Query) (rag.Augmentation, error) {
	start := time.Now()
	aug, frags, err := a.k.recall(ctx, a.agent, q.Text, q.Message)
	obs, _ := ctx.Value(observerKey{}).(*turnObserver)
	obs.retrieval(start, frags, err)
	return aug, err
}
