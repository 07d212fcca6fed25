package a2a

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzParseRequest: no input makes the JSON-RPC request parser or the
// params decoders panic; a parsed request always has a known method, an id
// and object params; a refusal of valid JSON is never a parse error; an
// error response always encodes; accepted ListTasks params are in bounds
// and their answer encodes.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","contextId":"c","parts":[{"kind":"text","text":"hi"},{"kind":"data","data":{"a":1}}]},"configuration":{"blocking":false,"historyLength":2}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"t","historyLength":0}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"contextId":"c","status":"TASK_STATE_WORKING","pageSize":10,"pageToken":"MTIzLng","historyLength":1,"statusTimestampAfter":"2026-01-02T15:04:05.123Z","includeArtifacts":true}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ListTasks","params":{"status":3,"pageSize":0}}`,
		`{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"agent/getAuthenticatedExtendedCard"}`,
		`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":null}`, `{"id":{}}`, `"x"`, `{`, ``, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if req == nil {
			t.Fatal("nil request")
		}
		if err != nil {
			if err.Code == CodeParseError && json.Valid(body) && utf8.Valid(body) {
				t.Fatalf("valid JSON %q refused as a parse error: %v", body, err)
			}
			if _, jerr := json.Marshal(ErrorResponse(req.ID, err)); jerr != nil {
				t.Fatalf("error response of %q: %v", body, jerr)
			}
			return
		}
		if req.Op == "" || len(req.ID) == 0 || len(req.Params) == 0 || req.Params[0] != '{' {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		switch req.Op {
		case MethodSendMessage, MethodStreamMessage:
			if p, perr := DecodeSendParams(req.Params); perr == nil {
				if p.Message.MessageID == "" || p.Message.Role != RoleUser || len(p.Message.Parts) == 0 {
					t.Fatalf("accepted message %+v", p.Message)
				}
				_ = p.Message.Text()
				if _, jerr := json.Marshal(Event{Message: &p.Message}.Encode(req.Dialect)); jerr != nil {
					t.Fatal(jerr)
				}
			}
		case MethodListTasks:
			if p, perr := DecodeListParams(req.Params); perr == nil {
				if p.PageSize < 1 || p.PageSize > maxPageSize || len(p.PageToken) > maxPageToken || (p.HistoryLength != nil && *p.HistoryLength < 0) ||
					(p.State != "" && !slices.Contains(v1States, p.State)) {
					t.Fatalf("accepted list params %+v", p)
				}
				list := TaskList{Tasks: []*Task{{ID: "t", Status: Status{State: p.State}}}, PageSize: p.PageSize}
				if _, jerr := json.Marshal(list.Encode()); jerr != nil {
					t.Fatal(jerr)
				}
			}
		case MethodExtendedCard:
		default:
			if p, perr := DecodeTaskParams(req.Params); perr == nil && p.ID == "" {
				t.Fatal("accepted an empty task id")
			}
		}
	})
}
