package ai

import (
	"context"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// FactsCollection is the Collection of the sources [RecallFacts] adds to
// an outcome: facts of long-term memory, not chunks of a knowledge base.
const FactsCollection = "memory"

// RecallFacts recalls what long-term memory m keeps about the turn's end
// user into the request: the facts most relevant to the user message that
// fit budget tokens (as m counts them), in a delimited block after the
// system prompt (and before a running summary), where a token window
// counts them. The user is the one of the turn's context, of tenant
// ([tool.User]: the Weft platform sets the chat request's user, a program
// sets it with tool.WithUser), never one named in the message; a turn
// without a user, or without a user message, recalls nothing. The facts
// are the outcome's Sources, with Collection [FactsCollection], announced
// by an EventRetrieval. A recall that fails is reported to listeners
// (NoticeRetrievalFailed) and the turn goes on without it. Learning facts
// is not part of the turn: run facts.Memory.Learn after it.
func RecallFacts(m *facts.Memory, tenant string, budget int) Option {
	return func(c *config) error {
		c.facts, c.factsTenant, c.factsBudget = m, tenant, budget
		return nil
	}
}

// recallFacts puts the facts recalled for the user message msg after the
// system prompt and in the outcome's sources.
func (s *turnState) recallFacts(ctx context.Context, msg llm.Message) error {
	c := s.e.cfg
	user := tool.User(ctx)
	if user == "" {
		return nil
	}
	r, err := c.facts.Recall(ctx, facts.Scope{Tenant: c.factsTenant, User: user}, msg.Text(), c.factsBudget)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.inv.notify(ctx, Notice{Kind: NoticeRetrievalFailed, Err: err})
		return nil
	}
	if len(r.Facts) == 0 {
		return nil
	}
	if len(s.msgs) > 0 && s.msgs[0].Role == llm.RoleSystem {
		s.msgs[0] = llm.SystemMessage(s.msgs[0].Text() + "\n\n" + r.Text)
	} else {
		s.msgs = append(s.msgs, llm.Message{})
		copy(s.msgs[1:], s.msgs)
		s.msgs[0] = llm.SystemMessage(r.Text)
	}
	sources := make([]rag.Source, len(r.Facts))
	for i, h := range r.Facts {
		sources[i] = rag.Source{ID: h.Fact.ID, Collection: FactsCollection, Content: h.Fact.Text, Score: h.Score,
			Metadata: map[string]string{"updated_at": h.Fact.UpdatedAt.Format(time.RFC3339)}}
	}
	s.out.Sources = append(s.out.Sources, sources...)
	if s.emit != nil && !s.emit(Event{Kind: EventRetrieval, Sources: sources}) {
		return errStopped
	}
	return nil
}
