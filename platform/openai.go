package platform

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/platform/turn"
	"github.com/weftlabs/weft/tool/toolname"
)

// The OpenAI-compatible face of the platform: agents appear as models, and
// a chat completion is a chat turn of the agent (docs/api.md, "OpenAI-compatible").
//
// Without an X-Weft-Session header the request's messages are the
// conversation: the client's system messages follow the agent's system
// prompt, the earlier messages are the history (cut by the agent's sliding
// window), and the last user message is the turn's query. The query and the
// answer are stored in a new session, whose id the answer carries in
// X-Weft-Session. With the header, the stored session is the history and
// the request's new messages (the user messages after its last assistant
// message) are the query.
//
// Sampling parameters, response_format and user are honoured; what is not
// implemented is listed in api.UnsupportedCompletionFields and refused or
// ignored as it says, never misread. The agent's tools and retrieval run
// server-side. Tools the client declares (tools) are offered to the model
// beside the agent's: when the model calls one, the answer carries the
// calls (tool_calls, finish_reason "tool_calls") and the client's tool
// messages continue the turn — as the request's last messages, after the
// assistant message that made the calls (or alone, with X-Weft-Session).

// openaiModels: GET /v1/models lists the tenant's agents as models.
func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	agents, err := s.meta.ListAgents(r.Context(), principalFrom(r.Context()).Tenant)
	if err != nil {
		writeOpenAIError(w, asAPIError(err))
		return
	}
	data := make([]api.Model, 0, len(agents))
	for _, a := range agents {
		data = append(data, api.Model{ID: a.Name, Object: "model", Created: a.CreatedAt.Unix(), OwnedBy: "weft"})
	}
	if s.workflows != nil {
		wfs, err := s.workflows.store.ListWorkflows(r.Context(), principalFrom(r.Context()).Tenant)
		if err != nil {
			writeOpenAIError(w, asAPIError(err))
			return
		}
		for _, wf := range wfs {
			data = append(data, api.Model{ID: "workflow:" + wf.Name, Object: "model", Created: wf.CreatedAt.Unix(), OwnedBy: "weft"})
		}
	}
	writeJSON(w, http.StatusOK, api.ModelList{Object: "list", Data: data})
}

// badParam is a 400 naming the request field param.
func badParam(param, format string, args ...any) *apiError {
	e := invalid("field %q: %s", param, fmt.Sprintf(format, args...))
	e.Param = param
	return e
}

// openaiTurn is a completion request read into a turn.
type openaiTurn struct {
	query string
	// results are the client's tool results that continue a turn;
	// tools the client's tools.
	results []llm.Message
	tools   []llm.ToolSpec
	parts   []llm.Part
	history []llm.Message
	system  string
	params  *ai.Params
	output  *ai.Output
}

// readCompletion checks a completion request and turns it into a turn's
// pieces. stateful says whether a stored session supplies the history.
func readCompletion(req *api.ChatCompletionRequest, stateful bool) (openaiTurn, *apiError) {
	var t openaiTurn
	if req.Model == "" {
		return t, badParam("model", "required: an agent name, or agent:<id>")
	}
	if req.N != nil && *req.N != 1 {
		return t, badParam("n", "only one choice is generated (n must be 1)")
	}
	switch {
	case req.Logprobs != nil && *req.Logprobs:
		return t, badParam("logprobs", "log probabilities are not returned")
	case req.TopLogprobs != nil:
		return t, badParam("top_logprobs", "log probabilities are not returned")
	case len(req.LogitBias) > 0 && string(req.LogitBias) != "null":
		return t, badParam("logit_bias", "token biases are not supported")
	case len(req.Functions) > 0 && string(req.Functions) != "null":
		return t, badParam("functions", "not supported; use tools")
	case len(req.FunctionCall) > 0 && string(req.FunctionCall) != "null":
		return t, badParam("function_call", "not supported; use tool_choice")
	case len(req.Audio) > 0 && string(req.Audio) != "null":
		return t, badParam("audio", "answers are text only")
	case len(req.Prediction) > 0 && string(req.Prediction) != "null":
		return t, badParam("prediction", "predicted outputs are not supported")
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return t, badParam("modalities", "answers are text only")
		}
	}
	offer := true
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var mode string
		if json.Unmarshal(req.ToolChoice, &mode) != nil || (mode != "auto" && mode != "none") {
			return t, badParam("tool_choice", `only "auto" and "none" are supported (the agent decides when to call tools)`)
		}
		offer = mode == "auto"
	}
	seen := map[string]bool{}
	for i, ct := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if ct.Type != "function" {
			return t, badParam(param+".type", "want \"function\", not %q", ct.Type)
		}
		f := ct.Function
		if f.Name == "" || toolname.Sanitize(f.Name) != f.Name {
			return t, badParam(param+".function.name", "%q is not a tool name (letters, digits, _ and -, at most 64)", f.Name)
		}
		if seen[f.Name] {
			return t, badParam(param+".function.name", "two tools are named %q", f.Name)
		}
		seen[f.Name] = true
		params := f.Parameters
		var obj map[string]any
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if json.Unmarshal(params, &obj) != nil {
			return t, badParam(param+".function.parameters", "want a JSON Schema object")
		}
		if offer {
			t.tools = append(t.tools, llm.ToolSpec{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}

	p := &ai.Params{Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		return t, badParam("temperature", "must be between 0 and 2")
	}
	if req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1) {
		return t, badParam("top_p", "must be between 0 and 1")
	}
	switch {
	case req.MaxCompletionTokens != nil:
		if *req.MaxCompletionTokens < 1 {
			return t, badParam("max_completion_tokens", "must be at least 1")
		}
		p.MaxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		if *req.MaxTokens < 1 {
			return t, badParam("max_tokens", "must be at least 1")
		}
		p.MaxTokens = *req.MaxTokens
	}
	if len(req.Stop) > 4 {
		return t, badParam("stop", "at most 4 sequences")
	}
	if len(req.Stop) > 0 {
		p.Stop = req.Stop
	}
	t.params = p

	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			t.output = &ai.Output{Format: &llm.ResponseFormat{Type: llm.FormatJSON},
				Instructions: "Answer with a single JSON object and nothing else."}
		case "json_schema":
			js := rf.JSONSchema
			if js == nil || len(js.Schema) == 0 || !json.Valid(js.Schema) {
				return t, badParam("response_format.json_schema", "a name and a JSON Schema object are required")
			}
			f := &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: js.Name, Schema: js.Schema, Strict: js.Strict != nil && *js.Strict}
			t.output = &ai.Output{Format: f,
				Instructions: "Answer with a single JSON value that matches this JSON Schema, and nothing else:\n" + string(js.Schema)}
		default:
			return t, badParam("response_format.type", "want text, json_object or json_schema, not %q", rf.Type)
		}
	}

	msgs := req.Messages
	if len(msgs) == 0 {
		return t, badParam("messages", "at least one message is required")
	}
	last := msgs[len(msgs)-1]
	switch last.Role {
	case "user":
	case "tool":
		return readToolResults(t, msgs, stateful)
	default:
		return t, badParam(fmt.Sprintf("messages[%d].role", len(msgs)-1), "the last message must be from the user or a tool, not %q", last.Role)
	}
	// The new messages: the user messages after the last assistant message.
	first := len(msgs) - 1
	for first > 0 && msgs[first-1].Role == "user" {
		first--
	}
	var query strings.Builder
	for i := first; i < len(msgs); i++ {
		text, parts, e := messageContent(msgs[i], i)
		if e != nil {
			return t, e
		}
		if query.Len() > 0 && text != "" {
			query.WriteString("\n\n")
		}
		query.WriteString(text)
		if parts != nil {
			t.parts = append(t.parts, parts...)
		}
	}
	t.query = strings.TrimSpace(query.String())
	if t.query == "" && t.parts == nil {
		return t, badParam(fmt.Sprintf("messages[%d].content", len(msgs)-1), "the last user message has no text")
	}
	if len(t.query) > MaxQueryBytes {
		return t, errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "the new user messages exceed %d bytes", MaxQueryBytes)
	}
	if t.parts != nil && t.query != "" {
		// The text goes first, as one part, then the images.
		t.parts = append([]llm.Part{llm.TextPart(t.query)}, imagesOnly(t.parts)...)
	}
	if stateful {
		return t, nil
	}

	// Stateless: the earlier messages are the conversation.
	return readHistory(t, msgs[:first])
}

// readToolResults reads a request that ends with tool messages: the
// client's results of the tool calls a turn ended with, which continue it.
func readToolResults(t openaiTurn, msgs []api.ChatMessage, stateful bool) (openaiTurn, *apiError) {
	first := len(msgs) - 1
	for first > 0 && msgs[first-1].Role == "tool" {
		first--
	}
	seen := map[string]bool{}
	for i := first; i < len(msgs); i++ {
		m := msgs[i]
		if m.ToolCallID == "" {
			return t, badParam(fmt.Sprintf("messages[%d].tool_call_id", i), "required on a tool message")
		}
		if seen[m.ToolCallID] {
			return t, badParam(fmt.Sprintf("messages[%d].tool_call_id", i), "two results for the tool call %q", m.ToolCallID)
		}
		seen[m.ToolCallID] = true
		text, parts, e := messageContent(m, i)
		if e != nil {
			return t, e
		}
		if parts != nil {
			return t, badParam(fmt.Sprintf("messages[%d].content", i), "a tool result is text")
		}
		t.results = append(t.results, llm.ToolResultMessage(m.ToolCallID, m.Name, text, false))
	}
	if stateful {
		return t, nil
	}
	if first == 0 || msgs[first-1].Role != "assistant" || len(msgs[first-1].ToolCalls) == 0 {
		return t, badParam(fmt.Sprintf("messages[%d]", first), "tool results must follow the assistant message that called the tools")
	}
	calls := map[string]bool{}
	for _, c := range msgs[first-1].ToolCalls {
		calls[c.ID] = true
	}
	for i := first; i < len(msgs); i++ {
		if !calls[msgs[i].ToolCallID] {
			return t, badParam(fmt.Sprintf("messages[%d].tool_call_id", i), "the assistant message before made no tool call %q", msgs[i].ToolCallID)
		}
	}
	return readHistory(t, msgs[:first])
}

// readHistory reads a stateless request's conversation before its new
// messages.
func readHistory(t openaiTurn, msgs []api.ChatMessage) (openaiTurn, *apiError) {
	var system []string
	calls := map[string]bool{}
	for i, m := range msgs {
		text, parts, e := messageContent(m, i)
		if e != nil {
			return t, e
		}
		switch m.Role {
		case "system", "developer":
			if text != "" {
				system = append(system, text)
			}
		case "user":
			msg := llm.UserMessage(text)
			if parts != nil {
				msg = llm.UserParts(parts...)
			}
			t.history = append(t.history, msg)
		case "assistant":
			msg := llm.AssistantMessage(text)
			if text == "" {
				msg.Parts = nil
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return t, badParam(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j), "id and function.name are required")
				}
				calls[tc.ID] = true
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			t.history = append(t.history, msg)
		case "tool":
			if !calls[m.ToolCallID] {
				return t, badParam(fmt.Sprintf("messages[%d].tool_call_id", i), "no earlier assistant message called a tool with id %q", m.ToolCallID)
			}
			t.history = append(t.history, llm.ToolResultMessage(m.ToolCallID, m.Name, text, false))
		default:
			return t, badParam(fmt.Sprintf("messages[%d].role", i), "want system, developer, user, assistant or tool, not %q", m.Role)
		}
	}
	t.system = strings.Join(system, "\n\n")
	return t, nil
}

// imagesOnly returns the image parts of parts.
func imagesOnly(parts []llm.Part) []llm.Part {
	var out []llm.Part
	for _, p := range parts {
		if p.Kind == llm.PartImage {
			out = append(out, p)
		}
	}
	return out
}

// messageContent reads a message's content: a string, null, or an array
// of text and image_url parts. parts is nil when the content is text only.
func messageContent(m api.ChatMessage, i int) (text string, parts []llm.Part, e *apiError) {
	c := m.Content
	if len(c) == 0 || string(c) == "null" {
		return "", nil, nil
	}
	if c[0] == '"' {
		if err := json.Unmarshal(c, &text); err != nil {
			return "", nil, badParam(fmt.Sprintf("messages[%d].content", i), "%v", err)
		}
		return text, nil, nil
	}
	var ps []api.ContentPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return "", nil, badParam(fmt.Sprintf("messages[%d].content", i), "want a string or an array of content parts")
	}
	var b strings.Builder
	for j, p := range ps {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "image_url":
			if m.Role != "user" || p.ImageURL == nil || p.ImageURL.URL == "" {
				return "", nil, badParam(fmt.Sprintf("messages[%d].content[%d]", i, j), "an image_url part needs a url, in a user message")
			}
			parts = append(parts, llm.ImageURLPart(p.ImageURL.URL))
		default:
			return "", nil, badParam(fmt.Sprintf("messages[%d].content[%d].type", i, j), "unsupported content part %q (text and image_url are supported)", p.Type)
		}
	}
	text = b.String()
	if parts != nil && text != "" {
		parts = append([]llm.Part{llm.TextPart(text)}, parts...)
	}
	return text, parts, nil
}

// firstImage names the first image part of the request, for the error of
// a model that cannot take images.
func firstImage(req *api.ChatCompletionRequest) string {
	for i, m := range req.Messages {
		var ps []api.ContentPart
		if len(m.Content) > 0 && m.Content[0] == '[' && json.Unmarshal(m.Content, &ps) == nil {
			for j, p := range ps {
				if p.Type == "image_url" {
					return fmt.Sprintf("messages[%d].content[%d]", i, j)
				}
			}
		}
	}
	return ""
}

// openaiChat: POST /v1/chat/completions.
func (s *Server) openaiChat(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var req api.ChatCompletionRequest
	if e := decodeJSON(w, r, &req); e != nil {
		writeOpenAIError(w, e)
		return
	}
	sessionID := r.Header.Get("X-Weft-Session")
	ot, e := readCompletion(&req, sessionID != "")
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	if name, ok := strings.CutPrefix(req.Model, "workflow:"); ok && s.workflows != nil {
		// A spent budget refuses a workflow model as it refuses an agent's
		// turn (429, before anything runs), not as a failed run (502).
		if e := s.accounting.check(r.Context(), p.Tenant, p.Key.ID); e != nil {
			writeOpenAIError(w, e)
			return
		}
		s.openaiWorkflow(w, r, &req, name, ot.query)
		return
	}
	var agent meta.Agent
	var err error
	if id, ok := strings.CutPrefix(req.Model, "agent:"); ok {
		agent, err = s.agents.getIn(r.Context(), p.Tenant, id)
	} else {
		agent, err = s.meta.AgentByName(r.Context(), p.Tenant, req.Model)
	}
	if err != nil {
		e := notFoundOr(err, "model", req.Model)
		e.Param = "model"
		writeOpenAIError(w, e)
		return
	}
	if e := checkUser("user", req.User); e != nil {
		e.Param = "user"
		writeOpenAIError(w, e)
		return
	}
	if img := firstImage(&req); img != "" && agent.Remote == nil {
		model, err := s.model(agent.Model)
		if err == nil && !model.Capabilities().Vision {
			writeOpenAIError(w, badParam(img, "the agent's model %q does not take images", model.Name()))
			return
		}
	}
	var userMsg llm.Message
	switch {
	case ot.results != nil:
	case ot.parts != nil:
		userMsg = llm.UserParts(ot.parts...)
	default:
		userMsg = llm.UserMessage(ot.query)
	}
	events := s.runTurnStream(r.Context(), turn.Input{Agent: agent, SessionID: sessionID, Stateless: sessionID == "",
		History: ot.history, System: ot.system, Message: userMsg, ToolResults: ot.results, ClientTools: ot.tools,
		User: req.User, Params: ot.params, Output: ot.output})
	fail := func(err error) {
		e := turnAPIError(err)
		if e.Param == "session_id" {
			e.Param = "X-Weft-Session"
		}
		writeOpenAIError(w, e)
	}
	var id string
	created := time.Now().Unix()
	if !req.Stream {
		var ans *turn.Answer
		for ev, err := range events {
			if err != nil {
				fail(err)
				return
			}
			switch ev.Kind {
			case turn.Started:
				w.Header().Set("X-Weft-Session", ev.SessionID)
				id = "chatcmpl-" + ev.MessageID
			case turn.Completed:
				ans = ev.Answer
			}
		}
		msg := api.AnswerMessage{Role: "assistant", Content: &ans.Answer}
		finish := "stop"
		if len(ans.Pending) > 0 {
			finish = "tool_calls"
			msg.ToolCalls = chatToolCalls(ans.Pending)
			if ans.Answer == "" {
				msg.Content = nil
			}
		}
		writeJSON(w, http.StatusOK, api.ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: agent.Name,
			Choices: []api.ChatChoice{{Message: msg, FinishReason: finish}}, Usage: ans.Usage})
		return
	}
	// The stream starts with the first piece of answer, so that a turn that
	// fails before it (context_too_long, a model error) is an HTTP error, as
	// OpenAI answers it.
	var sw *sseWriter
	stop := make(chan struct{})
	defer close(stop)
	chunk := func(delta api.ChunkDelta, finish *string) error {
		return sw.data(api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: agent.Name,
			Choices: []api.ChunkChoice{{Delta: delta, FinishReason: finish}}})
	}
	start := func() {
		if sw == nil {
			s.metrics.activeStreams.Inc()
			sw = newSSEWriter(w, s.frameDeadline())
			go sw.keepAlive(s.pingInterval(), stop)
			empty := ""
			chunk(api.ChunkDelta{Role: "assistant", Content: &empty}, nil)
		}
	}
	defer func() {
		if sw != nil {
			s.metrics.activeStreams.Dec()
		}
	}()
	var calls toolCallStream
	for ev, err := range events {
		if err != nil {
			if sw == nil {
				fail(err)
				return
			}
			sw.data(openAIErrorBody(turnAPIError(err)))
			return
		}
		switch ev.Kind {
		case turn.Started:
			w.Header().Set("X-Weft-Session", ev.SessionID)
			id = "chatcmpl-" + ev.MessageID
		case turn.TextDelta:
			start()
			text := ev.Text
			if chunk(api.ChunkDelta{Content: &text}, nil) != nil {
				return
			}
		case turn.ToolCallDelta:
			start()
			if chunk(api.ChunkDelta{ToolCalls: []api.ChatToolCall{calls.delta(ev.Tool.ID, ev.Tool.Name, ev.Text)}}, nil) != nil {
				return
			}
		case turn.Completed:
			start()
			stopReason := "stop"
			if len(ev.Answer.Pending) > 0 {
				stopReason = "tool_calls"
				if rest := calls.rest(ev.Answer.Pending); len(rest) > 0 {
					chunk(api.ChunkDelta{ToolCalls: rest}, nil)
				}
			}
			chunk(api.ChunkDelta{}, &stopReason)
			if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
				sw.data(api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: agent.Name,
					Choices: []api.ChunkChoice{}, Usage: &ev.Answer.Usage})
			}
			sw.raw([]byte("data: [DONE]\n\n"))
		}
	}
}

// chatToolCalls are calls of the client's tools in OpenAI's shape.
func chatToolCalls(calls []llm.ToolCall) []api.ChatToolCall {
	out := make([]api.ChatToolCall, len(calls))
	for i, c := range calls {
		out[i] = api.ChatToolCall{ID: c.ID, Type: "function", Function: api.ChatFunctionCall{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

// toolCallStream passes the calls of the client's tools on to a stream as
// the model streams them, as OpenAI streams them: a call's first chunk has
// its index, id, type and name (and the arguments so far), the next ones
// only the index and the next fragment of the arguments.
type toolCallStream struct {
	ids  []string // the calls passed on, by index
	args [][]byte // the arguments passed on, by index
}

// delta is the chunk's tool call of one piece of call id.
func (ts *toolCallStream) delta(id, name, fragment string) api.ChatToolCall {
	i := slices.Index(ts.ids, id)
	if i < 0 {
		i = len(ts.ids)
		ts.ids = append(ts.ids, id)
		ts.args = append(ts.args, []byte(fragment))
		return api.ChatToolCall{Index: &i, ID: id, Type: "function", Function: api.ChatFunctionCall{Name: name, Arguments: fragment}}
	}
	ts.args[i] = append(ts.args[i], fragment...)
	return api.ChatToolCall{Index: &i, Function: api.ChatFunctionCall{Arguments: fragment}}
}

// rest is what completes the turn's pending calls: a call not passed on
// comes whole (the model was not streamed, or its id and name came with
// nothing else), a call passed on in part with the rest of its arguments.
// What was passed on is the start of a call's arguments: they are its
// fragments, in order.
func (ts *toolCallStream) rest(pending []llm.ToolCall) []api.ChatToolCall {
	var out []api.ChatToolCall
	for _, c := range pending {
		i := slices.Index(ts.ids, c.ID)
		if i < 0 {
			i = len(ts.ids)
			ts.ids = append(ts.ids, c.ID)
			ts.args = append(ts.args, []byte(c.Arguments))
			out = append(out, api.ChatToolCall{Index: &i, ID: c.ID, Type: "function", Function: api.ChatFunctionCall{Name: c.Name, Arguments: c.Arguments}})
		} else if rest, ok := strings.CutPrefix(c.Arguments, string(ts.args[i])); ok && rest != "" {
			out = append(out, api.ChatToolCall{Index: &i, Function: api.ChatFunctionCall{Arguments: rest}})
		}
	}
	return out
}

// openAIRoute reports whether path is one of the OpenAI-compatible routes
// (/v1/chat/completions, /v1/models, and OpenAI's paths under them), whose
// every error takes OpenAI's shape: the handler's, and those raised before
// it (authentication, the rate limit, an unknown method, a panic), which
// writeRouteError answers.
func openAIRoute(path string) bool {
	for _, p := range [...]string{"/v1/chat/completions", "/v1/models"} {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// writeRouteError answers e in the error shape of r's route: OpenAI's on
// the OpenAI-compatible routes, the API's elsewhere. What runs before a
// route's handler answers through it.
func writeRouteError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if openAIRoute(r.URL.Path) {
		writeOpenAIError(w, e)
		return
	}
	writeError(w, e)
}

// openAIErrorBody is e in OpenAI's error shape. The type is OpenAI's for
// the failure — invalid_request_error for a 4xx (401 and 403 included, as
// OpenAI answers them), requests for the rate limit, insufficient_quota for
// a spent budget, server_error for a 5xx — and so is the code where OpenAI
// has one (invalid_api_key, model_not_found, rate_limit_exceeded,
// insufficient_quota, context_length_exceeded); other failures keep the
// API's code. param names the offending request field, or is null.
func openAIErrorBody(e *apiError) api.OpenAIError {
	typ, code, param := "invalid_request_error", e.Code, e.Param
	switch e.Code {
	case CodeUnauthorized:
		code = "invalid_api_key"
	case CodeNotFound:
		if param == "model" {
			code = "model_not_found"
		}
	case CodeRateLimited:
		typ, code = "requests", "rate_limit_exceeded"
	case CodeBudgetExceeded:
		typ, code = "insufficient_quota", "insufficient_quota"
	case CodeContextTooLong:
		code = "context_length_exceeded"
		if param == "" {
			param = "messages"
		}
	}
	if e.Status >= 500 {
		typ = "server_error"
	}
	d := api.OpenAIErrorDetail{Message: e.Message, Type: typ, Code: code}
	if param != "" {
		d.Param = &param
	}
	return api.OpenAIError{Error: d}
}

// writeOpenAIError answers in OpenAI's error shape. As writeError, it
// gives the cause of an internal error to the request's log line.
func writeOpenAIError(w http.ResponseWriter, e *apiError) {
	if sw, ok := w.(*statusWriter); ok && e.cause != nil {
		sw.cause = e.cause
	}
	status := e.Status
	if status == 499 {
		status = http.StatusBadRequest
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(max(e.retryAfter, 1)))
	}
	writeJSON(w, status, openAIErrorBody(e))
}
