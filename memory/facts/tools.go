package facts

import (
	"context"
	"errors"
	"time"

	"github.com/weftlabs/weft/tool"
)

// recallToolK bounds the facts the recall tool returns.
const recallToolK = 10

type rememberIn struct {
	Fact string `json:"fact" description:"The fact to remember about the user, one short sentence in the third person, e.g. \"Is allergic to peanuts.\""`
}

type rememberOut struct {
	ID    string `json:"id"`
	Fact  string `json:"fact"`
	Known bool   `json:"already_known,omitempty"`
}

type recallIn struct {
	Query string `json:"query" description:"What to recall about the user, e.g. \"where the user lives\"."`
}

type recalled struct {
	ID        string `json:"id"`
	Fact      string `json:"fact"`
	UpdatedAt string `json:"updated_at"`
}

type forgetIn struct {
	ID string `json:"id" description:"The id of the fact to forget, as recall returned it."`
}

type forgetOut struct {
	Forgotten bool `json:"forgotten"`
}

// errNoUser is what the tools answer when their context names no end user.
var errNoUser = errors.New("no end user: memory tools need the user of the conversation (tool.User)")

// Tools returns the memory tools an agent may be given, over m, for the
// end users of tenant:
//
//   - remember ({"fact"}) keeps a fact about the user, or returns the
//     same fact kept already;
//   - recall ({"query"}) returns the user's facts most relevant to the
//     query, with their ids;
//   - forget ({"id"}) deletes one of the user's facts.
//
// Each takes the user from its context ([tool.User]: the Weft platform
// sets the chat request's user; a program sets it with tool.WithUser),
// never from the model's arguments, and fails without one: a model cannot
// read or change another user's facts, and an id of another user's fact
// forgets nothing. Facts the tools keep have a Source of kind SourceTool
// with the conversation's memory ID ([tool.MemoryID]) as its session.
func (m *Memory) Tools(tenant string) []tool.Tool {
	scope := func(ctx context.Context) (Scope, error) {
		u := tool.User(ctx)
		if u == "" {
			return Scope{}, errNoUser
		}
		return Scope{Tenant: tenant, User: u}, nil
	}
	remember := tool.Func("remember", "Remember a fact about the user for later conversations: who they are, their situation, preferences and plans, or what they asked you to remember.",
		func(ctx context.Context, in rememberIn) (rememberOut, error) {
			sc, err := scope(ctx)
			if err != nil {
				return rememberOut{}, err
			}
			f, known, err := m.Remember(ctx, sc, in.Fact, Source{Kind: SourceTool, Session: tool.MemoryID(ctx)})
			if err != nil {
				return rememberOut{}, err
			}
			return rememberOut{ID: f.ID, Fact: f.Text, Known: known}, nil
		})
	recall := tool.Func("recall", "Recall what is remembered about the user from earlier conversations, most relevant to the query first.",
		func(ctx context.Context, in recallIn) ([]recalled, error) {
			sc, err := scope(ctx)
			if err != nil {
				return nil, err
			}
			r, err := m.Recall(ctx, sc, in.Query, 0)
			if err != nil {
				return nil, err
			}
			out := make([]recalled, 0, min(len(r.Facts), recallToolK))
			for _, h := range r.Facts[:min(len(r.Facts), recallToolK)] {
				out = append(out, recalled{ID: h.Fact.ID, Fact: h.Fact.Text, UpdatedAt: h.Fact.UpdatedAt.Format(time.DateOnly)})
			}
			return out, nil
		})
	forget := tool.Func("forget", "Forget one fact about the user, named by the id recall gave it: when it is wrong, out of date, or the user asks you to forget it.",
		func(ctx context.Context, in forgetIn) (forgetOut, error) {
			sc, err := scope(ctx)
			if err != nil {
				return forgetOut{}, err
			}
			ok, err := m.Forget(ctx, sc, in.ID)
			return forgetOut{Forgotten: ok}, err
		})
	return []tool.Tool{remember, recall, forget}
}
