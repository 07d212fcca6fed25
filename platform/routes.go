package platform

import (
	"context"
	"net/http"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// extraRoutes registers the chat and OpenAI-compatible routes.
func (s *Server) extraRoutes() {
	s.handle("POST /v1/agents/{id}/chat", use(endUser), s.chat)
	s.handle("POST /v1/chat/cancel", use(endUser), s.cancelTurn)
	s.handle("GET /v1/models", use(endUser), s.openaiModels)
	s.handle("POST /v1/chat/completions", use(endUser), s.openaiChat)
	s.a2aRoutes()
	if s.traces != nil {
		s.handle("GET /v1/sessions/{id}/messages/{message}/trace", need(viewer), s.turnTraceRoute)
	}
	if s.accounting != nil {
		s.handle("GET /v1/usage", need(viewer), s.usage)
		s.handle("GET /v1/prices", need(viewer), s.prices)
		s.handle("GET /v1/budgets", need(viewer), s.listBudgets)
		s.handle("PUT /v1/budgets", need(owner), s.putBudget)
		s.handle("DELETE /v1/budgets/{id}", need(owner), s.deleteBudget)
	}
}

// cancelTurn: POST /v1/chat/cancel {session_id | message_id} stops the
// running turn, on whichever replica runs it.
func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req api.CancelRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	key := req.SessionID
	if key == "" {
		key = req.MessageID
	}
	if key == "" {
		writeError(w, invalid("field \"session_id\" or \"message_id\" is required"))
		return
	}
	if req.SessionID != "" {
		if _, e := s.session(r, req.SessionID); e != nil {
			writeError(w, e)
			return
		}
	}
	// Turns are registered under the tenant too, so no tenant can cancel
	// another's turn by guessing ids.
	s.bus.publish(r.Context(), "cancel", p.Tenant, key)
	writeJSON(w, http.StatusOK, map[string]any{"cancelled": true})
}

// frameDeadline bounds the write of one SSE frame.
func (s *Server) frameDeadline() time.Duration {
	if s.cfg.FrameDeadline > 0 {
		return s.cfg.FrameDeadline
	}
	return 10 * time.Second
}

// pingInterval is the SSE keep-alive period (docs/api.md: at least every 15 s).
func (s *Server) pingInterval() time.Duration {
	if s.cfg.PingInterval > 0 {
		return s.cfg.PingInterval
	}
	return 10 * time.Second
}

// lockWait bounds how long a turn waits for its session to be free.
func (s *Server) lockWait() time.Duration {
	if s.cfg.LockWait > 0 {
		return s.cfg.LockWait
	}
	return 30 * time.Second
}

// Shutdown ends the running turns: each stream gets a terminal error event
// and its partial answer is saved; A2A subscriptions to tasks of other
// replicas end with an error. It returns when they have all ended or
// ctx is done. Call it before http.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	s.turns.shutdown()
	s.a2aTasks.shutdown()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.turns.active() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// knowledgeService recalls from an agent's knowledge bases.
type knowledgeService interface {
	recall(ctx context.Context, agent meta.Agent, query string, msg llm.Message) (rag.Augmentation, []api.RagFragment, error)
}

// agentTools returns the tools an agent may call in a turn: its whitelisted
// tools and its delegates. Tool sources (HTTP, MCP, SQL) and delegation
// register through toolSources.
func (s *Server) agentTools(ctx context.Context, agent meta.Agent, in turnInput) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, src := range s.toolSources {
		ts, err := src(ctx, agent, in)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

// toolSource contributes tools to an agent's turn.
type toolSource func(ctx context.Context, agent meta.Agent, in turnInput) ([]tool.Tool, error)

// validateResourceRefs checks the tool and knowledge-base ids of an agent
// against the tenant's registries.
func (s *Server) validateResourceRefs(r *http.Request, a *meta.Agent) *apiError {
	for _, v := range s.refValidators {
		if e := v(r.Context(), a); e != nil {
			return e
		}
	}
	return nil
}
