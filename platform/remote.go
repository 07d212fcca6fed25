package platform

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tokens"
	"github.com/weftlabs/weft/tool/secretref"
)

// Remote agents live on another Weft server. A turn of one runs there,
// through the Go client's stream (the remote's message.delta events are
// forwarded as they come), over one HTTP client
// for every remote call (through the outbound guard), and in one remote
// session per local session, so the remote agent keeps the conversation.
//
// The local session keeps the question and the answer. The remote session's
// id is kept in the local session's system record, which a remote agent's
// local session has no other use for: it is never sent to a model and
// GET /v1/sessions/{id}/messages does not list it.

// remoteSessionPrefix starts the system record that names the remote session.
const remoteSessionPrefix = "weft:remote-session "

// remoteClient returns the client of a remote agent, with its API key
// resolved for this call: a secret of the agent's tenant (api_key), or an
// allowed environment variable of an admin-registered agent (api_key_env).
// The key itself is never stored, and the returned Redactor removes it from
// whatever the remote answers (a hostile or careless remote may echo it).
func (s *Server) remoteClient(ctx context.Context, target meta.Agent) (*client.Client, *secretref.Redactor, error) {
	r := target.Remote
	red := &secretref.Redactor{}
	key, err := s.remoteKey(ctx, target, red)
	if err != nil {
		return nil, nil, err
	}
	return client.New(r.URL, key, client.WithHTTPClient(s.remoteHTTPClient())), red, nil
}

// remoteHTTPClient is the one HTTP client of remote agents, made on first
// use. The URLs are tenants': they go through the outbound guard like
// every request the server makes on a user's behalf.
func (s *Server) remoteHTTPClient() *http.Client {
	s.remoteOnce.Do(func() {
		s.remoteHTTP = s.guard.Client()
		s.remoteHTTP.Timeout = 5 * time.Minute
	})
	return s.remoteHTTP
}

// runRemoteTurn serves a turn of a remote agent.
func (s *Server) runRemoteTurn(ctx context.Context, in turnInput, start time.Time) (*api.ChatAnswer, *turnFailure) {
	// The engine holds the session of a local agent's turn; a remote
	// agent's turn holds it here.
	lctx, cancel := context.WithTimeout(ctx, s.lockWait())
	release, err := s.sessions.(memory.Locker).Lock(lctx, sessionKey(in.session), memory.Lease{Owner: s.cfg.Instance})
	cancel()
	if err != nil {
		if errors.Is(err, memory.ErrLockTimeout) {
			return nil, failTurn(errorf(http.StatusConflict, CodeConflict, "session %q is busy with another turn; retry when it ends", in.session.ID), false)
		}
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}
	defer release()
	if in.agent.Remote.Protocol == meta.RemoteA2A {
		return s.runA2ARemoteTurn(ctx, in, start)
	}
	key := sessionKey(in.session)
	counter := tokens.Estimator{}
	c, red, err := s.remoteClient(ctx, in.agent)
	if err != nil {
		return nil, failTurn(errorf(http.StatusBadGateway, CodeModelError, "%v", err), false)
	}
	// The remote session of this local session, if a turn made one.
	recs, err := s.sessions.Load(ctx, key, memory.Window{MaxMessages: 1})
	if err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}
	remoteSession := ""
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		remoteSession, _ = strings.CutPrefix(recs[0].Message.Text(), remoteSessionPrefix)
	}
	userMsg := llm.UserMessage(in.query)
	if _, err := s.sessions.Append(ctx, key, memory.Record{ID: questionRecordID(in.answerID), Message: userMsg, Tokens: tokens.MessageTokens(counter, userMsg)}); err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}

	req := client.ChatRequest{Query: in.query, SessionID: remoteSession, User: in.user}
	var ans *api.ChatAnswer
	var text strings.Builder
	for ev, serr := range c.ChatStream(ctx, in.agent.Remote.AgentID, req) {
		if serr != nil {
			err = serr
			break
		}
		switch ev.Type {
		case api.EventMessageDelta:
			// Per delta: a key split across two deltas is caught in the
			// stored answer below, not in the frames already sent.
			ev.Text = red.Redact(ev.Text)
			text.WriteString(ev.Text)
			if in.sink(turn.Event{Kind: turn.TextDelta, Text: ev.Text}) != nil {
				err = context.Canceled
			}
		case api.EventCompleted:
			ans = ev.Answer
			if ans != nil {
				ans.Answer = red.Redact(ans.Answer)
			}
		}
		if err != nil {
			break
		}
	}
	if err == nil && ans == nil {
		err = client.ErrStreamEnded
	}
	persistCtx := context.WithoutCancel(ctx)
	if err != nil {
		return nil, s.failRemoteTurn(ctx, in, red.Redact(text.String()), "remote agent", red.RedactError(err))
	}
	var out []memory.Record
	if ans.SessionID != "" && ans.SessionID != remoteSession {
		out = append(out, memory.Record{Message: llm.SystemMessage(remoteSessionPrefix + ans.SessionID)})
	}
	msg := llm.AssistantMessage(ans.Answer)
	out = append(out, memory.Record{ID: in.answerID, Message: msg, Tokens: tokens.MessageTokens(counter, msg)})
	if _, err := s.sessions.Append(persistCtx, key, out...); err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "answer not stored: %v", err), false)
	}
	if text.Len() == 0 && ans.Answer != "" {
		// A remote that sent no deltas (an older server): its answer in one.
		in.sink(turn.Event{Kind: turn.TextDelta, Text: ans.Answer})
	}
	s.touch(persistCtx, in.session)
	return &api.ChatAnswer{SessionID: in.session.ID, MessageID: in.answerID, Answer: ans.Answer, RagFragments: []api.RagFragment{},
		ToolCalls: []api.ToolCallOutcome{}, Usage: ans.Usage, LatencyMS: time.Since(start).Milliseconds(), Model: "remote:" + in.agent.Remote.URL}, nil
}

// failRemoteTurn ends a failed remote turn (Weft or A2A): the text
// streamed so far is stored as a partial answer, and the failure mapped to
// the API's error. partial and err are already redacted.
func (s *Server) failRemoteTurn(ctx context.Context, in turnInput, partial, what string, err error) *turnFailure {
	persistCtx := context.WithoutCancel(ctx)
	if partial != "" {
		msg := llm.AssistantMessage(partial)
		rec := memory.Record{ID: in.answerID, Message: msg, Tokens: tokens.MessageTokens(tokens.Estimator{}, msg), Partial: true}
		if _, perr := s.sessions.Append(persistCtx, sessionKey(in.session), rec); perr != nil {
			s.log.ErrorContext(ctx, "partial answer not stored", "session", in.session.ID, "err", perr)
		}
	}
	s.touch(persistCtx, in.session)
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return failTurn(errorf(499, CodeCancelled, "the turn was cancelled"), partial != "")
	}
	return failTurn(errorf(http.StatusBadGateway, CodeModelError, "%s %q at %s: %v", what, in.agent.Name, in.agent.Remote.URL, err), partial != "")
}
