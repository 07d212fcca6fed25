package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// TestMCPNodeClient runs the official MCP TypeScript SDK clients (pinned in
// testdata/mcp-node) against /mcp: v1 (@modelcontextprotocol/sdk, which
// negotiates 2025-11-25, with a session) and v2 (@modelcontextprotocol/client,
// which finds 2026-07-28 through server/discover and has no session). Each
// sees the tool list, a two-turn conversation through one agent, the second
// turn streamed as progress notifications, notifications/tools/list_changed
// after an agent is created, and a turn cancelled by the client
// (AbortSignal), whose partial answer is stored. It needs `npm ci` in that
// folder; .ci/run does it and sets WEFT_TEST_NODE=1, which turns the skip
// into a failure.
func TestMCPNodeClient(t *testing.T) {
	t.Parallel()
	node, dir := nodePackage(t, "mcp-node", "@modelcontextprotocol/sdk", "the MCP TypeScript SDK")
	nodePackage(t, "mcp-node", "@modelcontextprotocol/client", "the MCP TypeScript SDK v2")
	for _, c := range []struct{ script, version string }{{"script.mjs", "2025-11-25"}, {"modern.mjs", "2026-07-28"}} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			mcpNodeClient(t, node, dir, c.script, c.version)
		})
	}
}

// mcpNodeClient runs script, a client negotiating version.
func mcpNodeClient(t *testing.T, node, dir, script, version string) {
	// The third turn streams 300 words, one every 50 ms: it ends complete
	// after 15 s unless the cancellation stops it.
	slow, slowText := slowTurn()
	up := llmtest.NewServer(
		llmtest.Reply("Paris is the capital of France."),
		llmtest.Turn{Text: "Rome is the capital of Italy.", Chunks: 5},
		slow,
	)
	t.Cleanup(up.Close)
	url, key := inProcess(t, up)
	c := client.New(url, key)
	if _, err := c.CreateAgent(t.Context(), client.Agent{Name: "geo", Model: "openai/gpt-4o-mini", SystemPrompt: "Answer geography questions."}); err != nil {
		t.Fatal(err)
	}

	out := runNodeScript(t, node, dir, script, "WEFT_URL="+url, "WEFT_API_KEY="+key, "WEFT_AGENT=geo")
	type answer struct {
		Answer    string `json:"answer"`
		SessionID string `json:"session_id"`
		MessageID string `json:"message_id"`
		Sources   []any  `json:"sources"`
		Usage     struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	var got struct {
		Version        string   `json:"version"`
		Server         string   `json:"server"`
		ListChangedCap bool     `json:"list_changed_capability"`
		Tools          []string `json:"tools"`
		InputRequired  []string `json:"input_required"`
		First          struct {
			Text       string  `json:"text"`
			Structured *answer `json:"structured"`
			IsError    bool    `json:"is_error"`
		} `json:"first"`
		Second struct {
			Text       string  `json:"text"`
			Structured *answer `json:"structured"`
			Progress   []struct {
				Progress float64 `json:"progress"`
				Message  string  `json:"message"`
			} `json:"progress"`
		} `json:"second"`
		CreatedStatus int      `json:"created_status"`
		ListChanged   bool     `json:"list_changed"`
		ToolsAfter    []string `json:"tools_after"`
		Cancel        struct {
			Completed bool   `json:"completed"`
			Pieces    int    `json:"pieces"`
			Error     string `json:"error"`
		} `json:"cancel"`
		Session string `json:"session"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}

	if got.Version != version {
		t.Errorf("protocol version %q, want %q", got.Version, version)
	}
	if got.Server != "weft" || !got.ListChangedCap || !slices.Equal(got.Tools, []string{"geo"}) || !slices.Equal(got.InputRequired, []string{"query"}) {
		t.Errorf("server %q, listChanged %v, tools %v, required %v", got.Server, got.ListChangedCap, got.Tools, got.InputRequired)
	}
	f := got.First
	if f.IsError || f.Text != "Paris is the capital of France." || f.Structured == nil || f.Structured.Answer != f.Text ||
		f.Structured.SessionID == "" || f.Structured.MessageID == "" || f.Structured.Usage.TotalTokens == 0 || f.Structured.Sources == nil {
		t.Errorf("first turn = %+v (structured %+v)", f, f.Structured)
	}
	s := got.Second
	var streamed strings.Builder
	last := 0.0
	for _, p := range s.Progress {
		if p.Progress <= last {
			t.Errorf("progress does not increase: %+v", s.Progress)
		}
		last = p.Progress
		streamed.WriteString(p.Message)
	}
	if s.Text != "Rome is the capital of Italy." || s.Structured == nil || s.Structured.SessionID != got.Session ||
		len(s.Progress) < 5 || streamed.String() != s.Text {
		t.Errorf("second turn = %+v (structured %+v), streamed %q", s, s.Structured, streamed.String())
	}
	if got.CreatedStatus != 201 || !got.ListChanged || !slices.Equal(got.ToolsAfter, []string{"added_agent", "geo"}) {
		t.Errorf("create → %d, list_changed %v, tools after %v", got.CreatedStatus, got.ListChanged, got.ToolsAfter)
	}
	if got.Cancel.Completed || got.Cancel.Pieces < 1 {
		t.Errorf("cancel = %+v", got.Cancel)
	}

	// The second turn's model request held the first turn.
	reqs := up.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	var roles []string
	for _, m := range reqs[1].Messages {
		roles = append(roles, m.Role+":"+m.Text())
	}
	want := []string{"system:Answer geography questions.", "user:What is the capital of France?", "assistant:Paris is the capital of France.", "user:And of Italy?"}
	if mustJSON(roles) != mustJSON(want) {
		t.Errorf("second upstream request = %v\nwant %v", roles, want)
	}

	// The cancelled turn is stored as partial, well before it could have
	// ended on its own.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		msgs, err := c.Messages(t.Context(), got.Session)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(msgs); n == 6 {
			if m := msgs[5]; !m.Partial || m.Content == "" || len(m.Content) >= len(slowText) {
				t.Fatalf("the cancelled turn's answer: partial %v, %d of %d bytes", m.Partial, len(m.Content), len(slowText))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled turn was not stored: %d messages", len(msgs))
		}
	}
}
