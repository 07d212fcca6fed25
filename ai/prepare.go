package ai

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
)

// openMemory is step 1: resolve the turn's memory, take its lock (turns on
// one conversation are serialised), and load the window.
func (s *turnState) openMemory(ctx context.Context) (release func(), err error) {
	c, t := s.e.cfg, s.t
	s.chat = t.Memory
	if s.chat == nil && c.memory != nil && t.MemoryID != "" {
		s.chat = c.memory.Chat(t.MemoryID)
	}
	if s.chat == nil {
		s.chat = c.chat
	}
	if s.chat == nil {
		s.msgs = make([]llm.Message, 0, len(t.History)+4)
		s.msgs = append(s.msgs, t.History...)
		return nil, nil
	}
	release, err = s.chat.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("ai: memory %q: %w", t.MemoryID, err)
	}
	s.msgs, err = s.chat.Messages(ctx, make([]llm.Message, 0, s.chat.Window().MaxMessages+5))
	if err != nil {
		release()
		return nil, fmt.Errorf("ai: %w", err)
	}
	if c.transform != nil {
		// History may share its data with the store (see
		// memory.Chat.Messages); a transformer may rewrite requests in
		// place, so it gets copies.
		ownHistory(s.msgs)
	}
	return release, nil
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

// prepare runs steps 2 to 7: system message, retrieval, input guardrails,
// memory write of the user message, output format, moderation start.
func (s *turnState) prepare(ctx context.Context) error {
	c, t := s.e.cfg, s.t
	system := t.System
	if system == "" && c.systemFor != nil {
		var err error
		if system, err = c.systemFor(ctx, t.MemoryID); err != nil {
			return fmt.Errorf("ai: system message for %q: %w", t.MemoryID, err)
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

	if t.Message.Role == "" && t.Message.Parts == nil && t.Message.ToolCalls == nil {
		return s.prepareContinue()
	}
	user := t.Message
	if user.Role == "" {
		user.Role = llm.RoleUser
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
			s.out.Sources = aug.Sources
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

	stored := original
	if c.storeAugmented {
		stored = user
	}
	s.out.Messages = append(s.out.Messages, stored)
	if newSystem {
		sys := s.msgs[0]
		s.system = &sys
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

// prepareContinue prepares a Turn without a Message: the conversation
// goes on after the caller's tool results, with no user message, retrieval
// or input guardrails.
func (s *turnState) prepareContinue() error {
	if n := len(s.msgs); n == 0 || s.msgs[n-1].Role != llm.RoleTool {
		return errors.New("ai: a Turn without a Message continues a conversation that ends with tool results; this one does not")
	}
	if err := s.offerTools(); err != nil {
		return err
	}
	if o := s.t.Output; o != nil && o.Format != nil && s.e.cfg.caps.JSONSchema {
		s.base.ResponseFormat = o.Format
	}
	s.e.cfg.params.apply(&s.base)
	if s.t.Params != nil {
		s.t.Params.apply(&s.base)
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

// persist writes the turn's new messages to memory in one append: a new
// system message, the user message, the tool rounds and the final answer.
// After a failure the user message and the completed tool rounds are still
// written (a final answer never came), also when the caller's context
// ended, within persistTimeout.
func (s *turnState) persist(ctx context.Context) error {
	if s.chat == nil || len(s.out.Messages) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), persistTimeout)
		defer cancel()
	}
	msgs := s.out.Messages
	if s.system != nil {
		msgs = append([]llm.Message{*s.system}, msgs...)
	}
	if err := s.chat.Add(ctx, msgs...); err != nil {
		return fmt.Errorf("ai: %w", err)
	}
	return nil
}

// persistTimeout bounds the memory write of a turn whose context ended.
const persistTimeout = 5 * time.Second
