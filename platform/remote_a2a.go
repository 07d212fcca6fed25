package platform

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/a2a"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tokens"
	"github.com/weftlabs/weft/tool/secretref"
)

// Remote agents of protocol "a2a" are any A2A server (package a2a): the
// agent's url is its card's URL or its base URL. A turn sends the user's
// message to the endpoint the card names, in the version the card speaks,
// streaming when the card says the agent can (its artifact chunks are
// forwarded as they come); through the outbound guard, over the one HTTP
// client of remote agents. The remote contextId of a local session is kept
// in the session's system record, like a remote Weft session's id
// (remoteSessionPrefix), so the remote agent keeps the conversation. A
// cancelled turn cancels the remote task (best effort).

// runA2ARemoteTurn serves a turn of an A2A remote agent.
func (s *Server) runA2ARemoteTurn(ctx context.Context, in turnInput, start time.Time) (*api.ChatAnswer, *turnFailure) {
	key := sessionKey(in.session)
	counter := tokens.Estimator{}
	// The API key, optional for A2A, sent as a bearer token and redacted
	// from whatever the remote answers.
	red := &secretref.Redactor{}
	token, err := s.remoteKey(ctx, in.agent, red)
	if err != nil {
		return nil, failTurn(errorf(http.StatusBadGateway, CodeModelError, "%v", err), false)
	}
	c := a2a.NewClient(in.agent.Remote.URL, token, s.remoteHTTPClient())

	recs, err := s.sessions.Load(ctx, key, memory.Window{MaxMessages: 1})
	if err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}
	remoteContext := ""
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		remoteContext, _ = strings.CutPrefix(recs[0].Message.Text(), remoteSessionPrefix)
	}
	userMsg := llm.UserMessage(in.query)
	if _, err := s.sessions.Append(ctx, key, memory.Record{ID: questionRecordID(in.answerID), Message: userMsg, Tokens: tokens.MessageTokens(counter, userMsg)}); err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "session store: %v", err), false)
	}

	msg := a2a.Message{MessageID: in.answerID, ContextID: remoteContext, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(in.query)}}
	var (
		streamed  strings.Builder // the deltas forwarded
		artifacts []string        // the artifacts' texts, by first appearance
		index     = map[string]int{}
		final     string // an answer carried by a message or a final status
		contextID string
		taskID    string
		done      bool
	)
	delta := func(text string) error {
		if text == "" {
			return nil
		}
		text = red.Redact(text)
		streamed.WriteString(text)
		return in.sink(turn.Event{Kind: turn.TextDelta, Text: text})
	}
	status := func(st a2a.Status) error {
		if !st.State.Terminal() && st.State != a2a.StateInputRequired && st.State != a2a.StateAuthRequired {
			return nil
		}
		done = true
		text := ""
		if st.Message != nil {
			text = st.Message.Text()
		}
		if st.State != a2a.StateCompleted && st.State != a2a.StateInputRequired && st.State != a2a.StateAuthRequired {
			return errors.New("the remote task is " + string(st.State) + ": " + text)
		}
		final = text
		return nil
	}
	for ev, serr := range c.Send(ctx, msg) {
		err = serr
		if err != nil {
			break
		}
		switch {
		case ev.Message != nil:
			contextID, done, final = cmp.Or(ev.Message.ContextID, contextID), true, ev.Message.Text()
		case ev.Task != nil:
			contextID, taskID = cmp.Or(ev.Task.ContextID, contextID), ev.Task.ID
			for _, a := range ev.Task.Artifacts {
				index[a.ArtifactID] = len(artifacts)
				artifacts = append(artifacts, partsText(a.Parts))
			}
			err = status(ev.Task.Status)
		case ev.StatusUpdate != nil:
			contextID, taskID = cmp.Or(ev.StatusUpdate.ContextID, contextID), cmp.Or(ev.StatusUpdate.TaskID, taskID)
			err = status(ev.StatusUpdate.Status)
		case ev.ArtifactUpdate != nil:
			u := ev.ArtifactUpdate
			text := partsText(u.Artifact.Parts)
			i, seen := index[u.Artifact.ArtifactID]
			switch {
			case !seen:
				index[u.Artifact.ArtifactID] = len(artifacts)
				artifacts = append(artifacts, text)
			case u.Append:
				artifacts[i] += text
			default:
				artifacts[i] = text
			}
			if derr := delta(text); derr != nil {
				err = context.Canceled
			}
		}
		if err != nil || done {
			break
		}
	}
	if err == nil && !done {
		err = errors.New("the remote agent's answer ended before the task did")
	}
	answer := strings.Join(nonEmpty(artifacts), "\n\n")
	if answer == "" {
		answer = final
	}
	answer = red.Redact(answer)
	persistCtx := context.WithoutCancel(ctx)
	if err != nil {
		if taskID != "" && ctx.Err() != nil {
			// Best effort: the remote task need not run on.
			cctx, cancel := context.WithTimeout(persistCtx, 5*time.Second)
			c.Cancel(cctx, taskID)
			cancel()
		}
		return nil, s.failRemoteTurn(ctx, in, red.Redact(streamed.String()), "remote A2A agent", red.RedactError(err))
	}
	var out []memory.Record
	if contextID != "" && contextID != remoteContext {
		out = append(out, memory.Record{Message: llm.SystemMessage(remoteSessionPrefix + contextID)})
	}
	m := llm.AssistantMessage(answer)
	out = append(out, memory.Record{ID: in.answerID, Message: m, Tokens: tokens.MessageTokens(counter, m)})
	if _, err := s.sessions.Append(persistCtx, key, out...); err != nil {
		return nil, failTurn(errorf(http.StatusServiceUnavailable, CodeUnavailable, "answer not stored: %v", err), false)
	}
	if streamed.Len() == 0 && answer != "" {
		// A blocking remote, or one that answered in its status message.
		in.sink(turn.Event{Kind: turn.TextDelta, Text: answer})
	}
	s.touch(persistCtx, in.session)
	return &api.ChatAnswer{SessionID: in.session.ID, MessageID: in.answerID, Answer: answer, RagFragments: []api.RagFragment{},
		ToolCalls: []api.ToolCallOutcome{}, LatencyMS: time.Since(start).Milliseconds(), Model: "a2a:" + in.agent.Remote.URL}, nil
}

// partsText is the text of an artifact's parts, run together (a streamed
// artifact's chunks end up as its parts).
func partsText(ps []a2a.Part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
