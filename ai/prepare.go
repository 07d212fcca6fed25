package ai

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
)

// resolveChat returns the turn's memory: Turn.Memory, else the memory of
// Turn.MemoryID in MemoryPerID, else the engine's Memory; nil for none.
func (s *turnState) resolveChat() *memory.Chat {
	c, t := s.e.cfg, s.t
	if t.Memory != nil {
		return t.Memory
	}
	if c.memory != nil && t.MemoryID != "" {
		return c.memory.Chat(t.MemoryID)
	}
	return c.chat
}

// begin is step 1 with memory: it holds the conversation and loads its
// window (one round trip on a memory.TurnStore), storing user, the turn's
// user message, with it when user is not nil. A request that cannot fit
// the window's token budget even without history and retrieval is refused
// first, before the store is touched. History comes from the memory, or
// from Turn.History when the turn has one.
func (s *turnState) begin(ctx context.Context, chat *memory.Chat, system string, user *llm.Message) error {
	t := s.t
	w := chat.Window()
	m := &memTurn{chat: chat, counter: chat.Counter()}
	s.mem = m
	if w.MaxTokens > 0 {
		need := s.e.toolTokens(m.counter) + s.clientToolTokens() + tokens.ReplyOverhead
		if system != "" {
			need += tokens.MessageOverhead + m.counter.Count(system) // the system message's tokens
		}
		if t.Message.Role != "" || t.Message.Parts != nil {
			need += tokens.MessageTokens(m.counter, t.Message)
		}
		for _, msg := range t.ToolResults {
			need += tokens.MessageTokens(m.counter, msg)
		}
		if _, err := (memory.Window{MaxTokens: w.MaxTokens, Reserve: w.Reserve + need}).Fit(nil); err != nil {
			return fmt.Errorf("ai: %w", err)
		}
	}
	first := m.buf[:0]
	if user != nil {
		first = append(first, s.record(*user, questionID(t.ID)))
	}
	m.stored = len(first)
	if w.MaxTokens == 0 && t.History == nil && len(t.Decisions) == 0 && chat.Summarizer() == nil {
		// Without a token budget the window's cut does not depend on the
		// rest of the request: the messages come cut, and from an
		// in-process store without a copy of their records. (Decisions
		// want the records: their ids say which turn resolved a call.)
		var err error
		m.exact = true
		m.hold, s.msgs, err = chat.BeginMessages(ctx, make([]llm.Message, 0, w.MaxMessages+len(t.ToolResults)+5), first...)
		if err != nil {
			return &MemoryError{ID: t.MemoryID, Err: err}
		}
		if s.e.cfg.transform != nil {
			ownHistory(s.msgs)
		}
		return nil
	}
	hold, recs, err := chat.Begin(ctx, first...)
	if err != nil {
		return &MemoryError{ID: t.MemoryID, Err: err}
	}
	m.hold = hold
	if t.History == nil {
		m.summary = hold.Summary()
	} else {
		recs = make([]memory.Record, len(t.History))
		for i, msg := range t.History {
			recs[i] = memory.Record{Message: msg}
			if w.MaxTokens > 0 {
				recs[i].Tokens = tokens.MessageTokens(m.counter, msg)
			}
		}
	}
	s.msgs = make([]llm.Message, 0, len(recs)+len(t.ToolResults)+5)
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		s.msgs = append(s.msgs, recs[0].Message)
		recs = recs[1:]
	}
	m.log = recs
	for i := range recs {
		s.msgs = append(s.msgs, recs[i].Message)
	}
	if s.e.cfg.transform != nil {
		// History may share its data with the store (see
		// memory.Chat.Begin); a transformer may rewrite requests in place,
		// so it gets copies.
		ownHistory(s.msgs)
	}
	return nil
}

// fit is the window's cut of memory's history, once the request is known:
// what history may use is the window's budget less its Reserve and
// everything else the request carries (system message, tools, the turn's
// new messages, the reply). The history in s.msgs loses its oldest
// messages accordingly. A request that cannot fit fails with an error
// matching llm.ErrContextTooLong.
func (s *turnState) fit(next []llm.Message) error {
	m := s.mem
	if m.exact {
		return nil
	}
	w := m.chat.Window()
	if w.MaxTokens > 0 {
		w.Reserve += s.e.toolTokens(m.counter) + s.clientToolTokens() + tokens.ReplyOverhead
		for _, msg := range next {
			w.Reserve += tokens.MessageTokens(m.counter, msg)
		}
		if len(s.msgs) > 0 && s.msgs[0].Role == llm.RoleSystem {
			w.Reserve += tokens.MessageTokens(m.counter, s.msgs[0])
		}
	}
	kept, err := w.Fit(m.log)
	if err != nil {
		return fmt.Errorf("ai: %w", err)
	}
	if s.t.History == nil {
		// What the request lets go is what a summarizer folds.
		m.hold.Kept(kept)
	}
	if drop := len(m.log) - len(kept); drop > 0 {
		h := len(s.msgs) - len(m.log) // the system message, if any
		s.msgs = append(s.msgs[:h], s.msgs[h+drop:]...)
		m.log = kept
	}
	return nil
}

// sendSummary puts the conversation's running summary after the system
// prompt of the request (a system message of its own when there is none),
// where fit counts it against a token window, and in the outcome.
func (s *turnState) sendSummary() {
	sum := &s.mem.summary
	if len(s.msgs) > 0 && s.msgs[0].Role == llm.RoleSystem {
		s.msgs[0] = llm.SystemMessage(sum.SystemContext(s.msgs[0].Text()))
	} else {
		s.msgs = append(s.msgs, llm.Message{})
		copy(s.msgs[1:], s.msgs)
		s.msgs[0] = llm.SystemMessage(sum.SystemContext(""))
	}
	s.out.Summary = sum
}

// clientToolTokens is what the caller's tools cost in a request.
func (s *turnState) clientToolTokens() int {
	n := 0
	for _, c := range s.t.ClientTools {
		n += tokens.ToolTokens(s.mem.counter, c)
	}
	return n
}

// record is m as memory keeps it, with id.
func (s *turnState) record(m llm.Message, id string) memory.Record {
	return memory.Record{ID: id, Message: m, Tokens: tokens.MessageTokens(s.mem.counter, m)}
}

// ownHistory gives msgs parts, images and tool calls of their own.
func ownHistory(msgs []llm.Message) {
	for i := range msgs {
		m := &msgs[i]
		if m.Parts != nil {
			m.Parts = slices.Clone(m.Parts)
			for j := range m.Parts {
				if img := m.Parts[j].Image; img != nil {
					c := *img
					c.Data = slices.Clone(c.Data)
					m.Parts[j].Image = &c
				}
			}
		}
		m.ToolCalls = slices.Clone(m.ToolCalls)
	}
}

// prepare runs steps 1 to 7: memory, system message, retrieval, input
// guardrails, memory write of the user message, output format, moderation
// start.
func (s *turnState) prepare(ctx context.Context) error {
	c, t := s.e.cfg, s.t
	system := t.System
	if system == "" && c.systemFor != nil {
		var err error
		if system, err = c.systemFor(ctx, t.MemoryID); err != nil {
			return fmt.Errorf("ai: system message for %q: %w", t.MemoryID, err)
		}
	}
	cont := t.Message.Role == "" && t.Message.Parts == nil && t.Message.ToolCalls == nil
	if !cont && (len(t.ToolResults) > 0 || len(t.Decisions) > 0) {
		return errors.New("ai: a Turn has a Message, or ToolResults and Decisions, not both")
	}
	user := t.Message
	if user.Role == "" {
		user.Role = llm.RoleUser
	}
	if chat := s.resolveChat(); chat == nil {
		s.msgs = make([]llm.Message, 0, len(t.History)+len(t.ToolResults)+4)
		s.msgs = append(s.msgs, t.History...)
	} else {
		// The user message is stored with the lease, before the model is
		// called, when it is known now: no input guardrail may change or
		// refuse it, and memory keeps it as it came.
		var first *llm.Message
		if !cont && len(c.inGuards) == 0 && !c.storeAugmented {
			first = &user
		}
		if err := s.begin(ctx, chat, system, first); err != nil {
			return err
		}
	}
	newSystem := false
	if system != "" {
		switch {
		case len(s.msgs) > 0 && s.msgs[0].Role == llm.RoleSystem:
			if s.msgs[0].Text() != system {
				s.msgs[0] = llm.SystemMessage(system)
				newSystem = true
			}
		default:
			s.msgs = append(s.msgs, llm.Message{})
			copy(s.msgs[1:], s.msgs)
			s.msgs[0] = llm.SystemMessage(system)
			newSystem = true
		}
	}
	if newSystem && s.mem != nil {
		sys := s.msgs[0]
		s.mem.system = &sys
	}
	if c.facts != nil && !cont {
		if err := s.recallFacts(ctx, user); err != nil {
			return err
		}
	}
	if s.mem != nil && s.mem.summary.Text != "" {
		s.sendSummary()
	}

	if cont {
		return s.prepareContinue(ctx)
	}
	original := user
	if c.augmentor != nil {
		aug, err := c.augmentor.Augment(ctx, rag.Query{Text: user.Text(), Message: user, History: s.msgs})
		switch {
		case err != nil && c.augmentFatal:
			return fmt.Errorf("ai: retrieval: %w", err)
		case err != nil:
			s.inv.notify(ctx, Notice{Kind: NoticeRetrievalFailed, Err: err})
		default:
			if len(aug.Message.Parts) > 0 {
				user = aug.Message
				if user.Role == "" {
					user.Role = llm.RoleUser
				}
			}
			if s.out.Sources == nil {
				s.out.Sources = aug.Sources
			} else {
				s.out.Sources = append(s.out.Sources, aug.Sources...)
			}
			if s.emit != nil && len(aug.Sources) > 0 && !s.emit(Event{Kind: EventRetrieval, Sources: aug.Sources}) {
				return errStopped
			}
		}
	}

	if len(c.inGuards) > 0 {
		checked, err := guardrail.CheckInput(ctx, c.inGuards, guardrail.InputRequest{Message: user, History: s.msgs})
		if err != nil {
			if s.inv != nil {
				v := guardrail.Failure(err.Error())
				var ge *guardrail.Error
				if errors.As(err, &ge) {
					v.Reason = ge.Reason
				}
				s.inv.notify(ctx, Notice{Kind: NoticeGuardrail, Verdict: &v, Err: err})
			}
			return err
		}
		user = checked
	}

	sent := user
	if err := s.offerTools(); err != nil {
		return err
	}
	if o := t.Output; o != nil {
		if o.Format != nil && c.caps.JSONSchema {
			s.base.ResponseFormat = o.Format
		} else if o.Instructions != "" {
			sent = appendText(user, "\n\n"+o.Instructions)
		}
	}
	stored := original
	if c.storeAugmented {
		stored = user
	}
	if s.mem != nil {
		if err := s.fit([]llm.Message{sent}); err != nil {
			return err
		}
		if s.mem.stored == 0 {
			// Not stored with the lease: now that it passed the guardrails
			// and fits, before the model is called.
			if err := s.mem.hold.Append(ctx, s.record(stored, questionID(t.ID))); err != nil {
				return &MemoryError{ID: t.MemoryID, Err: err}
			}
			s.mem.stored = 1
		}
	}
	s.out.Messages = append(s.out.Messages, stored)
	s.msgs = append(s.msgs, sent)
	c.params.apply(&s.base)
	if t.Params != nil {
		t.Params.apply(&s.base)
	}

	if c.moderator != nil {
		s.mod = startModeration(ctx, c.moderator, user.Text())
	}
	return nil
}

// storeTimeout bounds storing the answers of calls that ran after the
// turn's context ended.
const storeTimeout = 5 * time.Second

// prepareContinue prepares a Turn without a Message: the conversation
// goes on after the caller's tool results, with no user message, retrieval
// or input guardrails. Turn.ToolResults are checked against the calls
// waiting for them and stored; without them, the conversation must end
// with the results already.
func (s *turnState) prepareContinue(ctx context.Context) error {
	t := s.t
	results := t.ToolResults
	if len(results) > 0 || len(t.Decisions) > 0 {
		ds, err := s.checkAnswers(results, t.Decisions)
		if err != nil {
			return err
		}
		var decideErr error
		if len(ds) > 0 {
			var answers []llm.Message
			answers, decideErr = s.decide(ctx, ds)
			if answers == nil {
				return decideErr
			}
			results = append(results[:len(results):len(results)], answers...)
		}
		if s.mem != nil {
			recs := s.mem.buf[:0]
			for i, m := range results {
				recs = append(recs, s.record(m, resultID(t.ID, i)))
			}
			actx := ctx
			if ctx.Err() != nil {
				// The calls ran: their answers are stored all the same.
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
				defer cancel()
			}
			if err := s.mem.hold.Append(actx, recs...); err != nil {
				return errors.Join(decideErr, &MemoryError{ID: t.MemoryID, Err: err})
			}
			s.mem.stored = len(results)
		}
		s.out.Messages = append(s.out.Messages, results...)
		if decideErr != nil {
			return decideErr
		}
	} else if n := len(s.msgs); n == 0 || s.msgs[n-1].Role != llm.RoleTool {
		return errors.New("ai: a Turn without a Message continues a conversation that ends with tool results; this one does not")
	}
	if err := s.offerTools(); err != nil {
		return err
	}
	if s.mem != nil {
		if err := s.fit(results); err != nil {
			return err
		}
	}
	s.msgs = append(s.msgs, results...)
	if o := t.Output; o != nil && o.Format != nil && s.e.cfg.caps.JSONSchema {
		s.base.ResponseFormat = o.Format
	}
	s.e.cfg.params.apply(&s.base)
	if t.Params != nil {
		t.Params.apply(&s.base)
	}
	return nil
}

// offerTools sets the tools of every request: the engine's and the
// caller's.
func (s *turnState) offerTools() error {
	s.base.Tools = s.e.specs
	ct := s.t.ClientTools
	if len(ct) == 0 {
		return nil
	}
	if !s.e.cfg.caps.Tools {
		return errors.New("ai: the model declares no tool support; it cannot be offered the caller's tools")
	}
	tools := make([]llm.ToolSpec, 0, len(s.e.specs)+len(ct))
	tools = append(tools, s.e.specs...)
	for _, c := range ct {
		for _, t := range tools {
			if t.Name == c.Name {
				return fmt.Errorf("ai: the caller's tool %q has the name of another tool", c.Name)
			}
		}
		tools = append(tools, c)
	}
	s.base.Tools = tools
	return nil
}

// appendText adds text to a message's last text part (or a new one before
// the images).
func appendText(m llm.Message, text string) llm.Message {
	parts := make([]llm.Part, len(m.Parts), len(m.Parts)+1)
	copy(parts, m.Parts)
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i].Kind == llm.PartText {
			parts[i].Text += text
			m.Parts = parts
			return m
		}
	}
	m.Parts = append([]llm.Part{llm.TextPart(text)}, parts...)
	return m
}

// persist is step 12: it ends the turn's hold on memory, storing what
// memory does not hold yet — a new system message, the tool rounds and the
// answer (named Turn.ID) — and releasing the conversation, in one round
// trip on a memory.TurnStore. After a failure it stores the finished tool
// rounds and, when the model was answering, the text it had said, marked
// partial and named Turn.ID; also when the caller's context ended (within
// a bound of its own, see memory.Hold.End).
func (s *turnState) persist(ctx context.Context, failed error) error {
	if s.mem == nil || s.mem.hold == nil {
		return nil
	}
	// The messages stored before (with the lease, or before the model
	// call) lead Outcome.Messages, once the turn got so far.
	msgs := s.out.Messages[min(s.mem.stored, len(s.out.Messages)):]
	n := len(msgs)
	partial := failed != nil && s.out.Partial
	if partial {
		n++
	}
	if n == 0 {
		return s.end(ctx, nil)
	}
	recs := s.mem.buf[:0]
	if s.mem.system != nil {
		recs = append(recs, s.record(*s.mem.system, ""))
	}
	answer := -1 // the answer: the last assistant message of a turn that succeeded
	if failed == nil {
		for i := range msgs {
			if msgs[i].Role == llm.RoleAssistant {
				answer = i
			}
		}
	}
	for i := range msgs {
		id := ""
		if i == answer {
			id = s.t.ID
			if s.out.Interrupt != nil {
				id = s.out.Interrupt.ID
			}
		}
		recs = append(recs, s.record(msgs[i], id))
	}
	if partial {
		r := s.record(llm.AssistantMessage(s.out.Text), s.t.ID)
		r.Partial = true
		recs = append(recs, r)
	}
	return s.end(ctx, recs)
}

func (s *turnState) end(ctx context.Context, recs []memory.Record) error {
	if err := s.mem.hold.End(ctx, recs...); err != nil {
		return &MemoryError{ID: s.t.MemoryID, Err: err}
	}
	return nil
}
