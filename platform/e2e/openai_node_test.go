package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// TestOpenAINodeClient runs the official OpenAI Node client (pinned in
// testdata/openai-node) against the OpenAI-compatible endpoint: model list,
// a blocking completion, a streamed one with usage, the SDK's stream
// helper, API errors in OpenAI's terms (an unknown model, a wrong key,
// fields of the wrong type), session continuity through X-Weft-Session, a
// conversation sent as history, a structured answer and a client-side tool
// round trip (blocking, streamed through the SDK's helper, and read raw:
// the call's arguments in the fragments the upstream streamed).
// It needs `npm ci` in that folder; .ci/run does it and sets
// WEFT_TEST_NODE=1, which turns the skip into a failure.
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, dir := nodePackage(t, "openai-node", "openai", "the OpenAI Node client")

	up := llmtest.NewServer(
		llmtest.Reply("Paris is the capital of France."),
		llmtest.Turn{Text: "Rome is the capital of Italy.", Chunks: 5},
		llmtest.Turn{Text: "Madrid.", Chunks: 2},
		llmtest.Reply("Your name is Ada."),
		llmtest.Reply(`{"city":"Paris"}`),
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply("It is 21 °C in Paris."),
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_r", Name: "get_weather", Arguments: `{"city":"Rome"}`}}, ArgChunks: 3},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_m", Name: "get_weather", Arguments: `{"city":"Madrid"}`}}, ArgChunks: 4},
	)
	t.Cleanup(up.Close)
	url, key := inProcess(t, up)
	c := client.New(url, key)
	if _, err := c.CreateAgent(t.Context(), client.Agent{Name: "geo", Model: "openai/gpt-4o-mini", SystemPrompt: "Answer geography questions."}); err != nil {
		t.Fatal(err)
	}

	out := runNode(t, node, dir, "WEFT_BASE_URL="+url+"/v1", "WEFT_API_KEY="+key, "WEFT_MODEL=geo")
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	var got struct {
		Models   []string `json:"models"`
		Blocking struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
			Object       string `json:"object"`
			Session      string `json:"session"`
			Usage        *usage `json:"usage"`
		} `json:"blocking"`
		Stream struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
			Session      string `json:"session"`
			Usage        *usage `json:"usage"`
			Chunks       int    `json:"chunks"`
		} `json:"stream"`
		Helper struct {
			Text string `json:"text"`
		} `json:"helper"`
		History struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"history"`
		Structured struct {
			City string `json:"city"`
		} `json:"structured"`
		NError *struct {
			Status int    `json:"status"`
			Param  string `json:"param"`
			Type   string `json:"type"`
		} `json:"n_error"`
		Tools struct {
			FinishFirst  string  `json:"finish_first"`
			ContentFirst *string `json:"content_first"`
			ID           string  `json:"id"`
			Name         string  `json:"name"`
			Arguments    string  `json:"arguments"`
			Text         string  `json:"text"`
			Finish       string  `json:"finish"`
		} `json:"tools"`
		ToolsStream struct {
			Finish    string `json:"finish"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"tools_stream"`
		ToolsRaw struct {
			Deltas []struct {
				Index     int     `json:"index"`
				ID        *string `json:"id"`
				Type      *string `json:"type"`
				Name      *string `json:"name"`
				Arguments *string `json:"arguments"`
			} `json:"deltas"`
			Finish string `json:"finish"`
		} `json:"tools_raw"`
		Error *struct {
			Status     int    `json:"status"`
			Code       string `json:"code"`
			Type       string `json:"type"`
			Param      string `json:"param"`
			IsAPIError bool   `json:"is_api_error"`
		} `json:"error"`
		AuthError *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Type   string `json:"type"`
			Param  string `json:"param"`
			IsAuth bool   `json:"is_auth"`
		} `json:"auth_error"`
		TypeErrors map[string]*struct {
			Status int    `json:"status"`
			Type   string `json:"type"`
			Param  string `json:"param"`
		} `json:"type_errors"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}

	if len(got.Models) != 1 || got.Models[0] != "geo" {
		t.Errorf("models = %v, want [geo]", got.Models)
	}
	b := got.Blocking
	if b.Text != "Paris is the capital of France." || b.FinishReason != "stop" || b.Object != "chat.completion" ||
		b.Usage == nil || b.Usage.TotalTokens == 0 || b.Usage.TotalTokens != b.Usage.PromptTokens+b.Usage.CompletionTokens || b.Session == "" {
		t.Errorf("blocking = %+v (usage %+v)", b, b.Usage)
	}
	s := got.Stream
	if s.Text != "Rome is the capital of Italy." || s.FinishReason != "stop" || s.Chunks < 5 || s.Usage == nil || s.Usage.TotalTokens == 0 {
		t.Errorf("stream = %+v (usage %+v)", s, s.Usage)
	}
	if s.Session != b.Session {
		t.Errorf("the streamed turn ran in session %q, not the X-Weft-Session sent (%q)", s.Session, b.Session)
	}
	if got.Helper.Text != "Madrid." {
		t.Errorf("stream helper = %+v", got.Helper)
	}
	if ge := got.Error; ge == nil || ge.Status != 404 || ge.Code != "model_not_found" || ge.Type != "invalid_request_error" || ge.Param != "model" || !ge.IsAPIError {
		t.Errorf("unknown model error = %+v", got.Error)
	}
	if ae := got.AuthError; ae == nil || ae.Status != 401 || ae.Code != "invalid_api_key" || ae.Type != "invalid_request_error" || ae.Param != "null" || !ae.IsAuth {
		t.Errorf("wrong key error = %+v", got.AuthError)
	}
	for _, field := range []string{"temperature", "max_tokens", "messages"} {
		if te := got.TypeErrors[field]; te == nil || te.Status != 400 || te.Type != "invalid_request_error" || te.Param != field {
			t.Errorf("%s of the wrong type: error = %+v", field, te)
		}
	}

	// The session carried history to the model: the third request holds
	// the two earlier turns.
	reqs := up.Requests()
	if len(reqs) != 9 {
		t.Fatalf("%d upstream requests, want 9", len(reqs))
	}
	var roles []string
	for _, m := range reqs[2].Messages {
		roles = append(roles, m.Role+":"+m.Text())
	}
	want := []string{"system:Answer geography questions.", "user:What is the capital of France?", "assistant:Paris is the capital of France.",
		"user:And of Italy?", "assistant:Rome is the capital of Italy.", "user:And of Spain?"}
	if mustJSON(roles) != mustJSON(want) {
		t.Errorf("third upstream request = %v\nwant %v", roles, want)
	}

	// The conversation sent as history reached the model whole, with the
	// client's system message after the agent's, and its parameters.
	if got.History.Text != "Your name is Ada." || got.History.FinishReason != "stop" {
		t.Errorf("history answer = %+v", got.History)
	}
	roles = nil
	for _, m := range reqs[3].Messages {
		roles = append(roles, m.Role+":"+m.Text())
	}
	want = []string{"system:Answer geography questions.\n\nBe terse.", "user:My name is Ada.", "assistant:Noted, Ada.", "user:What is my name?"}
	if mustJSON(roles) != mustJSON(want) {
		t.Errorf("history request = %v\nwant %v", roles, want)
	}
	var sent struct {
		Temperature         *float64 `json:"temperature"`
		MaxTokens           int      `json:"max_tokens"`
		MaxCompletionTokens int      `json:"max_completion_tokens"`
		Seed                *int64   `json:"seed"`
		ResponseFormat      *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	json.Unmarshal(reqs[3].Body, &sent)
	if sent.Temperature == nil || *sent.Temperature != 0.2 || max(sent.MaxTokens, sent.MaxCompletionTokens) != 50 || sent.Seed == nil || *sent.Seed != 3 {
		t.Errorf("history request parameters: %s", reqs[3].Body)
	}
	if got.Structured.City != "Paris" {
		t.Errorf("structured answer = %+v", got.Structured)
	}
	json.Unmarshal(reqs[4].Body, &sent)
	if sent.ResponseFormat == nil || sent.ResponseFormat.Type != "json_schema" {
		t.Errorf("structured request: %s", reqs[4].Body)
	}
	if got.NError == nil || got.NError.Status != 400 || got.NError.Param != "n" || got.NError.Type != "invalid_request_error" {
		t.Errorf("n=2 error = %+v", got.NError)
	}

	// The client's tool: called, answered by the client's tool message,
	// and the same call streamed.
	tc := got.Tools
	if tc.FinishFirst != "tool_calls" || tc.ContentFirst != nil || tc.ID != "call_w" || tc.Name != "get_weather" || tc.Arguments != `{"city":"Paris"}` ||
		tc.Text != "It is 21 °C in Paris." || tc.Finish != "stop" {
		t.Errorf("client tool round trip = %+v", tc)
	}
	var offered struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(reqs[5].Body, &offered)
	if len(offered.Tools) != 1 || offered.Tools[0].Function.Name != "get_weather" {
		t.Errorf("tools offered upstream: %s", reqs[5].Body)
	}
	roles = nil
	for _, m := range reqs[6].Messages {
		roles = append(roles, m.Role+":"+m.Text()+":"+m.ToolCallID)
	}
	want = []string{"system:Answer geography questions.:", "user:Weather in Paris?:", "assistant::", `tool:{"temp_c":21}:call_w`}
	if mustJSON(roles) != mustJSON(want) {
		t.Errorf("tool result request = %v\nwant %v", roles, want)
	}
	if ts := got.ToolsStream; ts.Finish != "tool_calls" || ts.Name != "get_weather" || ts.Arguments != `{"city":"Rome"}` {
		t.Errorf("streamed client tool call = %+v", ts)
	}
	// Read raw, the call came as the upstream streamed it: a first delta
	// with index, id, type and name, then its four argument fragments.
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	var deltas []string
	var args strings.Builder
	for _, d := range got.ToolsRaw.Deltas {
		deltas = append(deltas, fmt.Sprintf("%d %s %s %s", d.Index, str(d.ID), str(d.Type), str(d.Name)))
		args.WriteString(str(d.Arguments))
	}
	want = []string{"0 call_m function get_weather", "0 null null null", "0 null null null", "0 null null null", "0 null null null"}
	if mustJSON(deltas) != mustJSON(want) || args.String() != `{"city":"Madrid"}` || got.ToolsRaw.Finish != "tool_calls" {
		t.Errorf("raw streamed tool call: deltas %v, arguments %q, finish %q\nwant %v", deltas, args.String(), got.ToolsRaw.Finish, want)
	}

	msgs, err := c.Messages(t.Context(), b.Session)
	if err != nil || len(msgs) != 6 {
		t.Fatalf("session messages = %d, %v", len(msgs), err)
	}
}
