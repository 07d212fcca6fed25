package tool_test

import (
	"context"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// TestContextAccessors: a tool reads the memory ID and the end user from
// its context; arguments naming them change nothing.
func TestContextAccessors(t *testing.T) {
	t.Parallel()
	type Args struct {
		MemoryID string `json:"memory_id,omitempty"`
		User     string `json:"user,omitempty"`
	}
	whoami := tool.Func("whoami", "", func(ctx context.Context, _ Args) (string, error) {
		return tool.MemoryID(ctx) + "/" + tool.User(ctx), nil
	})
	set, err := tool.NewSet(whoami)
	if err != nil {
		t.Fatal(err)
	}
	exec := tool.Executor{Tools: set}
	call := []llm.ToolCall{{ID: "1", Name: "whoami", Arguments: `{"memory_id":"mallory","user":"mallory"}`}}
	for _, tt := range []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), "/"},
		{tool.WithMemoryID(context.Background(), "cart-7"), "cart-7/"},
		{tool.WithUser(tool.WithMemoryID(context.Background(), "cart-7"), "ada"), "cart-7/ada"},
	} {
		out, err := exec.Run(tt.ctx, call, nil)
		if err != nil || out[0].Content != tt.want {
			t.Errorf("whoami = %q, %v; want %q", out[0].Content, err, tt.want)
		}
	}
}
