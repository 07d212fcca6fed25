package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/tool/toolname"
)

// a2aJS returns node and the folder of the pinned official A2A JavaScript
// SDK (testdata/a2a-js), skipping the test when they are not installed
// (failing with WEFT_TEST_NODE=1, as .ci/run sets it after npm ci).
func a2aJS(t *testing.T) (string, string) {
	t.Helper()
	return nodePackage(t, "a2a-js", "@a2a-js/sdk", "the A2A JavaScript SDK")
}

// TestA2AJSClient runs the official A2A JavaScript SDK client (@a2a-js/sdk,
// pinned in testdata/a2a-js) against a weft serve process: it reads the
// agent's card, holds a two-turn conversation through contextId, streams a
// third turn, reads the task back, cancels a streamed turn after its first
// chunk, speaks protocol 0.3 through the SDK's compat layer, gets a typed
// error for an unknown task, resubscribes to running tasks (1.0 and 0.3)
// and, with a typed error, to an ended one, lists the conversation's tasks
// in pages and by state, and is refused without the key.
func TestA2AJSClient(t *testing.T) {
	t.Parallel()
	node, dir := a2aJS(t)
	slow, _ := slowTurn()
	// The turns resubscribed to: long enough (about 3 s) for the client to
	// join while they run.
	counting := strings.TrimSpace(strings.Repeat("one two three four five ", 20))
	up := llmtest.NewServer(
		llmtest.Reply("Nice to meet you, Ada."),
		llmtest.Reply("Your name is Ada."),
		llmtest.Turn{Text: "Ada Lovelace wrote the first program.", Chunks: 4},
		slow,
		llmtest.Reply("Paris."),
		llmtest.Turn{Text: "Rome.", Chunks: 1},
		llmtest.Turn{Text: counting, ChunkDelay: 30 * time.Millisecond},
		llmtest.Turn{Text: counting, ChunkDelay: 30 * time.Millisecond},
	)
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	p := startServe(t, "", vars, "--addr", "127.0.0.1:0")
	c := client.New(p.url(), adminKey)
	if _, err := c.CreateAgent(t.Context(), client.Agent{Name: "geo", Model: "openai/gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(t.Context(), node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "WEFT_URL=" + p.url(), "WEFT_API_KEY=" + adminKey, "WEFT_AGENT=geo"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Card struct {
			Name            string `json:"name"`
			Streaming       bool   `json:"streaming"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"card"`
		First struct {
			Kind, State, ContextID, TaskID, Text string
		} `json:"first"`
		Second struct {
			State, ContextID, Text, AgentMessage, TaskID string
		} `json:"second"`
		Stream struct {
			Kinds                                      []string
			Text, State, FirstState, ContextID, TaskID string
		} `json:"stream"`
		Got struct {
			State   string
			History int
			Text    string
		} `json:"got"`
		Cancel struct {
			Kinds                                []string
			TaskID, CancelState, Final, GetState string
		} `json:"cancel"`
		Legacy struct {
			ProtocolVersion, State, ContextID, Text, StreamState, GetState, TaskID, StreamTaskID string
			StreamKinds                                                                          []string
		} `json:"legacy"`
		NotFound          string   `json:"notFound"`
		Resubscribe       followed `json:"resubscribe"`
		LegacyResubscribe followed `json:"legacyResubscribe"`
		ResubscribeEnded  string   `json:"resubscribeEnded"`
		List              struct {
			Page1, Page2, Canceled          []string
			Next2, CanceledText             string
			Total, PageSize, Artifacts, All int
		} `json:"list"`
		Unauthorized string `json:"unauthorized"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	t.Logf("%s", out)
	if got.Card.Name != "geo" || !got.Card.Streaming || got.Card.ProtocolVersion != "1.0" {
		t.Errorf("card = %+v", got.Card)
	}
	if got.First.Kind != "task" || got.First.State != "TASK_STATE_COMPLETED" || got.First.Text != "Nice to meet you, Ada." || !strings.HasPrefix(got.First.ContextID, "ses") {
		t.Errorf("first turn = %+v", got.First)
	}
	if got.Second.State != "TASK_STATE_COMPLETED" || got.Second.ContextID != got.First.ContextID || got.Second.Text != "Your name is Ada." || got.Second.AgentMessage != "Your name is Ada." {
		t.Errorf("second turn = %+v", got.Second)
	}
	// The second request to the model carried the first turn.
	reqs := up.Requests()
	if len(reqs) < 2 || !bytes.Contains(reqs[1].Body, []byte("my name is Ada")) || !bytes.Contains(reqs[1].Body, []byte("Nice to meet you, Ada.")) {
		t.Errorf("the second turn's model request lacks the first turn")
	}
	kinds := strings.Join(got.Stream.Kinds, ",")
	if !strings.HasPrefix(kinds, "task,statusUpdate,artifactUpdate,artifactUpdate") || !strings.HasSuffix(kinds, "artifactUpdate,statusUpdate") ||
		got.Stream.Text != "Ada Lovelace wrote the first program." || got.Stream.FirstState != "TASK_STATE_SUBMITTED" || got.Stream.State != "TASK_STATE_COMPLETED" || got.Stream.ContextID != got.First.ContextID {
		t.Errorf("stream = %+v", got.Stream)
	}
	if got.Got.State != "TASK_STATE_COMPLETED" || got.Got.History != 2 || got.Got.Text != got.Stream.Text {
		t.Errorf("GetTask = %+v", got.Got)
	}
	if got.Cancel.CancelState != "TASK_STATE_CANCELED" || got.Cancel.Final != "TASK_STATE_CANCELED" || got.Cancel.GetState != "TASK_STATE_CANCELED" {
		t.Errorf("cancel = %+v", got.Cancel)
	}
	if l := got.Legacy; !strings.HasPrefix(l.ProtocolVersion, "0.3") || l.State != "TASK_STATE_COMPLETED" || l.ContextID != got.First.ContextID || l.Text != "Paris." ||
		strings.Join(l.StreamKinds, ",") != "task,statusUpdate,artifactUpdate,artifactUpdate,statusUpdate" || l.StreamState != "TASK_STATE_COMPLETED" || l.GetState != "TASK_STATE_COMPLETED" {
		t.Errorf("protocol 0.3 = %+v", l)
	}
	if got.NotFound != "JsonRpcTaskNotFoundError" {
		t.Errorf("unknown task: %q", got.NotFound)
	}
	// Resubscribed while the turn ran: the task first (working, with the
	// answer so far), the rest of the answer, the completed status; the
	// whole answer, as GetTask reads it.
	for name, r := range map[string]followed{"1.0": got.Resubscribe, "0.3": got.LegacyResubscribe} {
		kinds := strings.Join(r.Kinds, ",")
		if r.FirstState != "TASK_STATE_WORKING" || !strings.HasPrefix(kinds, "task,artifactUpdate") || !strings.HasSuffix(kinds, "artifactUpdate,statusUpdate") ||
			r.Text != counting || !r.LastChunk || r.State != "TASK_STATE_COMPLETED" {
			t.Errorf("%s resubscribe = %+v", name, r)
		}
	}
	if got.Resubscribe.SentState != "TASK_STATE_WORKING" || got.Resubscribe.GetText != counting {
		t.Errorf("resubscribed task = %+v", got.Resubscribe)
	}
	if got.ResubscribeEnded != "JsonRpcUnsupportedOperationError" {
		t.Errorf("resubscribing to an ended task: %q", got.ResubscribeEnded)
	}
	// The conversation's six tasks, newest first.
	l := got.List
	if want := []string{got.Legacy.StreamTaskID, got.Legacy.TaskID, got.Cancel.TaskID, got.Stream.TaskID}; strings.Join(l.Page1, ",") != strings.Join(want, ",") {
		t.Errorf("page 1 = %v, want %v", l.Page1, want)
	}
	if want := []string{got.Second.TaskID, got.First.TaskID}; strings.Join(l.Page2, ",") != strings.Join(want, ",") || l.Next2 != "" {
		t.Errorf("page 2 = %v (next %q), want %v", l.Page2, l.Next2, want)
	}
	if l.Total != 6 || l.PageSize != 4 || l.Artifacts != 0 || l.All != 8 || len(l.Canceled) != 1 || l.Canceled[0] != got.Cancel.TaskID || l.CanceledText == "" {
		t.Errorf("list = %+v", l)
	}
	if !strings.Contains(got.Unauthorized, "401") {
		t.Errorf("without the key: %q", got.Unauthorized)
	}
	// The cancelled turn's partial answer is in the session.
	msgs, err := c.Messages(t.Context(), got.First.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	if partial := msgs[7]; len(msgs) != 12 || partial.Role != "assistant" || !partial.Partial || partial.ID != got.Cancel.TaskID {
		t.Errorf("session: %d messages, the cancelled turn's answer %+v", len(msgs), msgs[7])
	}
}

// followed is what client.mjs saw of a resubscribed task.
type followed struct {
	Kinds                                       []string
	FirstState, State, Text, SentState, GetText string
	LastChunk                                   bool
}

// TestA2ARemoteAgent: a Weft agent whose remote is an A2A agent served by
// the official A2A JavaScript SDK's server (testdata/a2a-js/echo-server.mjs:
// its express handlers, request handler and task store, with an echo
// executor) answers chats, keeps the remote context across turns, streams
// the remote's chunks, and is delegated to by another Weft agent. The
// remote is reached through the outbound guard (loopback allowed by
// WEFT_HTTP_TOOLS_ALLOW); a blocking remote (streaming off) works too.
func TestA2ARemoteAgent(t *testing.T) {
	t.Parallel()
	node, dir := a2aJS(t)
	echo := func(streaming string) string {
		cmd := exec.CommandContext(t.Context(), node, "echo-server.mjs")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ECHO_STREAMING=" + streaming}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		port := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
					port <- p
				}
			}
			close(port)
		}()
		select {
		case p, ok := <-port:
			if !ok {
				t.Fatalf("echo-server.mjs exited: %s", stderr.String())
			}
			return "http://127.0.0.1:" + p + "/"
		case <-time.After(60 * time.Second):
			t.Fatalf("echo-server.mjs did not listen: %s", stderr.String())
		}
		return ""
	}
	streamingURL, blockingURL := echo("1"), echo("0")

	up := llmtest.NewServer()
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	vars[netguard.AllowEnv] = "127.0.0.1"
	p := startServe(t, "", vars, "--addr", "127.0.0.1:0")
	c := client.New(p.url(), adminKey)
	ctx := t.Context()
	proxy, err := c.CreateAgent(ctx, client.Agent{Name: "echo", Remote: &client.Remote{Protocol: "a2a", URL: streamingURL}})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.Chat(ctx, proxy.ID, client.ChatRequest{Query: "hello"})
	if err != nil || ans.Answer != "echo #1: hello" {
		t.Fatalf("first turn = %+v, %v", ans, err)
	}
	// The same local session is the same remote context (the echo counts
	// its context's turns), and a streamed turn forwards both chunks.
	var deltas []string
	var final string
	for ev, err := range c.ChatStream(ctx, proxy.ID, client.ChatRequest{Query: "again", SessionID: ans.SessionID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case client.EventMessageDelta:
			deltas = append(deltas, ev.Text)
		case client.EventCompleted:
			final = ev.Answer.Answer
		}
	}
	if strings.Join(deltas, "|") != "echo #2: |again" || final != "echo #2: again" {
		t.Fatalf("streamed turn: deltas %q, answer %q", deltas, final)
	}
	// A new session is a new remote context.
	if ans, err := c.Chat(ctx, proxy.ID, client.ChatRequest{Query: "fresh"}); err != nil || ans.Answer != "echo #1: fresh" {
		t.Fatalf("new session = %+v, %v", ans, err)
	}
	// A blocking remote.
	blocking, err := c.CreateAgent(ctx, client.Agent{Name: "echo-blocking", Remote: &client.Remote{Protocol: "a2a", URL: blockingURL + ".well-known/agent-card.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if ans, err := c.Chat(ctx, blocking.ID, client.ChatRequest{Query: "still"}); err != nil || ans.Answer != "echo #1: still" {
		t.Fatalf("blocking remote = %+v, %v", ans, err)
	}
	// A Weft agent delegates to the A2A agent.
	front, err := c.CreateAgent(ctx, client.Agent{Name: "front", Model: "openai/gpt-4o-mini", DelegateAgentIDs: []string{proxy.ID}})
	if err != nil {
		t.Fatal(err)
	}
	up.Enqueue(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: toolname.Join("delegate_agent", proxy.ID), Arguments: `{"query":"from front"}`}}},
		llmtest.Reply("The echo agent said it back."))
	ans, err = c.Chat(ctx, front.ID, client.ChatRequest{Query: "ask the echo agent"})
	if err != nil || ans.Answer != "The echo agent said it back." || len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || !strings.Contains(ans.ToolCalls[0].Result, "echo #1: from front") {
		t.Fatalf("delegation = %+v, %v", ans, err)
	}
}

// TestA2APublicURL: weft serve names its A2A endpoints under --public-url
// (over WEFT_PUBLIC_URL), whatever Host and X-Forwarded-* a client sends;
// a public URL that is not an http(s) base URL stops it at start.
func TestA2APublicURL(t *testing.T) {
	t.Parallel()
	up := llmtest.NewServer()
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	vars["WEFT_PUBLIC_URL"] = "https://from-env.example"
	p := startServe(t, "", vars, "--addr", "127.0.0.1:0", "--public-url", "https://agents.example.com/weft/")
	a, err := client.New(p.url(), adminKey).CreateAgent(t.Context(), client.Agent{Name: "geo", Model: "openai/gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", p.url()+"/a2a/agents/geo/.well-known/agent-card.json", nil)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("X-Forwarded-Proto", "http")
	req.Header.Set("X-Forwarded-Host", "evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || card.URL != "https://agents.example.com/weft/a2a/agents/"+a.ID {
		t.Fatalf("card url = %q, %v", card.URL, err)
	}

	cmd := exec.CommandContext(t.Context(), weftBinary(t), "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--public-url", "agents.example.com")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "want an http or https URL") {
		t.Fatalf("weft serve with a bad public URL: %v\n%s", err, out)
	}
}
