package tool

import "context"

// A tool learns whom it runs for from its context, never from the model's
// arguments: the model cannot name another user's conversation.

type (
	memoryIDKey struct{}
	userKey     struct{}
)

// MemoryID returns the memory ID of the conversation the calling tool runs
// for (LangChain4j's @ToolMemoryId), so that a per-user tool — a cart, a
// calendar — finds its user: the turn's memory ID when package ai runs
// the tool (the conversation's key when the turn has a memory without an
// ID), the session's id on the Weft platform, and "" outside a turn.
func MemoryID(ctx context.Context) string {
	return stringValue[memoryIDKey](ctx)
}

// WithMemoryID returns a copy of ctx carrying the memory ID that
// [MemoryID] reports. Package ai sets it for the tools of each turn; call
// it to run a tool outside a turn, in a test for example.
func WithMemoryID(ctx context.Context, id string) context.Context {
	return &stringCtx[memoryIDKey]{ctx, id}
}

// User returns the end user the calling tool runs for: on the Weft
// platform the chat request's user field (kept through delegation to
// other agents), in a program whatever the caller set with [WithUser] on
// the context of the call, and "" when nobody named one.
func User(ctx context.Context) string {
	return stringValue[userKey](ctx)
}

// WithUser returns a copy of ctx carrying the end user that [User]
// reports. The context of a typed call (package ai) reaches its tools, so
// a program names its user once, on the call.
func WithUser(ctx context.Context, user string) context.Context {
	return &stringCtx[userKey]{ctx, user}
}

// stringCtx is a context carrying one string under the key K. Its Value
// answers K with the context itself, not the string, which would be boxed:
// one allocation per value instead of context.WithValue's two (tools run
// in such a context every round).
type stringCtx[K comparable] struct {
	context.Context
	val string
}

func (c *stringCtx[K]) Value(key any) any {
	if _, ok := key.(K); ok {
		return c
	}
	return c.Context.Value(key)
}

// stringValue returns the string ctx carries under K, "" when none.
func stringValue[K comparable](ctx context.Context) string {
	var k K
	if c, ok := ctx.Value(k).(*stringCtx[K]); ok {
		return c.val
	}
	return ""
}
