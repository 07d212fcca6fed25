package platform

import (
	"encoding/json"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/turn"
)

// The native chat stream's events (docs/api.md, "Chat"): a turn's typed
// events encoded once, at the edge. The structs list their fields in
// alphabetical order, nested ones too: the stream was written from maps
// before, and its bytes stay the same (the testdata/*.sse goldens pin them).

type createdData struct {
	MessageID string `json:"message_id"`
	SessionID string `json:"session_id"`
	Type      string `json:"type"`
}

type deltaData struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// retrievalData's fragments keep the field order of api.RagFragment (they
// were struct values in the map).
type retrievalData struct {
	RagFragments []api.RagFragment `json:"rag_fragments"`
	Type         string            `json:"type"`
}

type fragmentData struct {
	ChunkID         string  `json:"chunk_id"`
	Content         string  `json:"content"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	KnowledgeBaseID string  `json:"knowledge_base_id"`
	Score           float64 `json:"score"`
}

type toolCallData struct {
	Arguments json.RawMessage `json:"arguments"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Type      string          `json:"type"`
}

type toolResultData struct {
	Error  *string `json:"error,omitempty"`
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	OK     bool    `json:"ok"`
	Result *string `json:"result,omitempty"`
	Type   string  `json:"type"`
}

type delegateData struct {
	AgentID string  `json:"agent_id"`
	Depth   int     `json:"depth"`
	Error   *string `json:"error,omitempty"`
	OK      *bool   `json:"ok,omitempty"`
	Text    *string `json:"text,omitempty"`
	Type    string  `json:"type"`
}

type completedData struct {
	Answer       string         `json:"answer"`
	CostUSD      float64        `json:"cost_usd"`
	Interrupt    *api.Interrupt `json:"interrupt,omitempty"`
	LatencyMS    int64          `json:"latency_ms"`
	MessageID    string         `json:"message_id"`
	Model        string         `json:"model,omitempty"`
	RagFragments []fragmentData `json:"rag_fragments"`
	SessionID    string         `json:"session_id"`
	ToolCalls    []outcomeData  `json:"tool_calls"`
	Type         string         `json:"type"`
	Usage        usageData      `json:"usage"`
}

type outcomeData struct {
	Arguments json.RawMessage `json:"arguments"`
	Error     string          `json:"error"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	OK        bool            `json:"ok"`
	Result    string          `json:"result"`
}

type usageData struct {
	CompletionTokens int `json:"completion_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// interruptData is the interrupt event: the paused turn's api.Interrupt
// with "type" added.
type interruptData struct {
	*api.Interrupt
	Type string `json:"type"`
}

type errorData struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

func fragmentsData(fs []api.RagFragment) []fragmentData {
	out := make([]fragmentData, len(fs))
	for i, f := range fs {
		out[i] = fragmentData{ChunkID: f.ChunkID, Content: f.Content, DocumentID: f.DocumentID, DocumentName: f.DocumentName,
			KnowledgeBaseID: f.KnowledgeBaseID, Score: f.Score}
	}
	return out
}

// sortedJSON is raw with its objects' keys in order, as a map would
// write them.
func sortedJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// completedEvent is the data of chat.completed: the blocking answer with
// "type" added.
func completedEvent(a *api.ChatAnswer) completedData {
	d := completedData{Answer: a.Answer, CostUSD: a.CostUSD, Interrupt: a.Interrupt, LatencyMS: a.LatencyMS, MessageID: a.MessageID, Model: a.Model,
		RagFragments: fragmentsData(a.RagFragments), SessionID: a.SessionID, ToolCalls: make([]outcomeData, len(a.ToolCalls)),
		Type:  api.EventCompleted,
		Usage: usageData{CompletionTokens: a.Usage.CompletionTokens, PromptTokens: a.Usage.PromptTokens, TotalTokens: a.Usage.TotalTokens}}
	for i, c := range a.ToolCalls {
		d.ToolCalls[i] = outcomeData{Arguments: sortedJSON(c.Arguments), Error: c.Error, ID: c.ID, Name: c.Name, OK: c.OK, Result: c.Result}
	}
	return d
}

// writeEvent writes one event of a turn to the native chat stream.
func writeEvent(sw *sseWriter, ev turn.Event) error {
	switch ev.Kind {
	case turn.Started:
		return sw.event(api.EventCreated, createdData{MessageID: ev.MessageID, SessionID: ev.SessionID, Type: api.EventCreated})
	case turn.Retrieval:
		return sw.event(api.EventRetrieval, retrievalData{RagFragments: ev.Fragments, Type: api.EventRetrieval})
	case turn.TextDelta:
		return sw.event(api.EventMessageDelta, deltaData{Text: ev.Text, Type: api.EventMessageDelta})
	case turn.ToolCall:
		t := ev.Tool
		return sw.event(api.EventToolCall, toolCallData{Arguments: t.Arguments, ID: t.ID, Name: t.Name, Type: api.EventToolCall})
	case turn.ToolResult:
		t := ev.Tool
		d := toolResultData{ID: t.ID, Name: t.Name, OK: t.OK, Type: api.EventToolResult}
		if t.OK {
			d.Result = &t.Result
		} else {
			d.Error = &t.Error
		}
		return sw.event(api.EventToolResult, d)
	case turn.DelegateStart:
		return sw.event(api.EventDelegateStart, delegateData{AgentID: ev.Delegate.AgentID, Depth: ev.Delegate.Depth, Type: api.EventDelegateStart})
	case turn.DelegateDelta:
		return sw.event(api.EventDelegateDelta, delegateData{AgentID: ev.Delegate.AgentID, Depth: ev.Delegate.Depth, Text: &ev.Text, Type: api.EventDelegateDelta})
	case turn.DelegateEnd:
		d := ev.Delegate
		dd := delegateData{AgentID: d.AgentID, Depth: d.Depth, OK: &d.OK, Type: api.EventDelegateEnd}
		if !d.OK {
			dd.Error = &d.Error
		}
		return sw.event(api.EventDelegateEnd, dd)
	case turn.Interrupted:
		return sw.event(api.EventInterrupt, interruptData{Interrupt: ev.Interrupt, Type: api.EventInterrupt})
	case turn.Completed:
		return sw.event(api.EventCompleted, completedEvent(&ev.Answer.ChatAnswer))
	}
	return nil
}

// writeErrorEvent ends a native chat stream with a failed turn.
func writeErrorEvent(sw *sseWriter, e *turn.Error) error {
	return sw.event(api.EventError, errorData{Code: e.Code, Message: e.Message, Type: api.EventError})
}
