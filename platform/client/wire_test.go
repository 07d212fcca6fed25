package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

// TestWireTypesKeepServerFields: the client's types are written apart from
// the server's, so this test reads what the server answers for objects with
// every field set and checks that decoding it into the client's type and
// encoding it again loses nothing: a field the server gains and the client
// lacks fails here instead of being dropped silently by client users.
func TestWireTypesKeepServerFields(t *testing.T) {
	t.Setenv("ORDERS_DSN", "file:"+filepath.Join(t.TempDir(), "orders.db"))
	url, key := newPlatform(t, nil)
	call := func(method, path string, body any) []byte {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, url+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
		return out
	}
	id := func(raw []byte) string {
		var v struct{ ID string }
		json.Unmarshal(raw, &v)
		return v.ID
	}

	kb := call("POST", "/v1/knowledge-bases", map[string]any{"name": "docs", "chunk_size": 256, "chunk_overlap": 16})
	doc := call("POST", "/v1/knowledge-bases/"+id(kb)+"/documents", map[string]any{"name": "a.md", "content": "# A\n\nalpha"})
	tool := call("POST", "/v1/tools", map[string]any{"name": "weather", "kind": "http", "description": "The weather",
		"http":       map[string]any{"method": "POST", "url": "https://api.example.com/w", "headers": map[string]string{"X-Unit": "c"}, "timeout_ms": 2000},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})
	sqlTool := call("POST", "/v1/tools", map[string]any{"name": "orders", "kind": "sql", "description": "Orders",
		"sql":        map[string]any{"driver": "sqlite", "dsn_env": "ORDERS_DSN", "query": "SELECT * FROM orders WHERE id = ?", "bind": []string{"id"}},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "integer"}}}})
	wf := call("POST", "/v1/workflows", map[string]any{"name": "echo", "description": "Echoes", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"text": map[string]any{"type": "string"}}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"reply": "{{ inputs.text }}"}},
	}})
	helper := call("POST", "/v1/agents", map[string]any{"name": "helper"})
	agent := call("POST", "/v1/agents", map[string]any{"name": "full", "system_prompt": "Be brief.", "model": "scripted/demo",
		"temperature": 0.2, "max_tokens": 300, "context_window_tokens": 8000, "reserve_tokens": 600,
		"knowledge_base_ids": []string{id(kb)}, "retrieval": map[string]any{"top_k": 3, "mode": "vector", "min_score": 0.1},
		"tool_ids": []string{id(tool)}, "delegate_agent_ids": []string{id(helper)}, "workflow_ids": []string{id(wf)},
		"max_tool_rounds": 4, "max_delegate_depth": 2, "enabled": false,
		"timeouts": map[string]any{"first_token_ms": 1000, "idle_ms": 2000, "turn_ms": 30000}})
	call("PUT", "/v1/secrets/FAR_KEY", map[string]any{"value": "sk-far-remote-key"})
	remote := call("POST", "/v1/agents", map[string]any{"name": "far",
		"remote": map[string]any{"protocol": "weft", "url": "https://agents.example.com", "agent_id": "agt_far", "api_key": "${secret:FAR_KEY}"}})
	keyRaw := call("POST", "/v1/api-keys", map[string]any{"name": "ci"})

	check := func(what string, raw []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: decode %s: %v", what, raw, err)
		}
		again, _ := json.Marshal(v)
		if w, ok := v.(*client.Workflow); ok {
			again = w.Raw
		}
		var want, got any
		json.Unmarshal(raw, &want)
		json.Unmarshal(again, &got)
		if lost := lostFields("", want, got); len(lost) > 0 {
			t.Errorf("%s: the client's %T drops %v of the server's answer %s", what, v, lost, raw)
		}
	}
	check("agent", call("GET", "/v1/agents/"+id(agent), nil), &client.Agent{})
	check("remote agent", call("GET", "/v1/agents/"+id(remote), nil), &client.Agent{})
	check("http tool", call("GET", "/v1/tools/"+id(tool), nil), &client.Tool{})
	check("sql tool", call("GET", "/v1/tools/"+id(sqlTool), nil), &client.Tool{})
	check("knowledge base", call("GET", "/v1/knowledge-bases/"+id(kb), nil), &client.KnowledgeBase{})
	check("document", call("GET", "/v1/knowledge-bases/"+id(kb)+"/documents/"+id(doc), nil), &client.Document{})
	// A workflow keeps the whole answer in Raw.
	var w client.Workflow
	check("workflow", call("GET", "/v1/workflows/"+id(wf), nil), &w)
	var keys []json.RawMessage
	json.Unmarshal(call("GET", "/v1/api-keys", nil), &keys)
	for _, k := range keys {
		if id(k) == id(keyRaw) {
			check("api key", k, &client.APIKey{})
		}
	}
}

// lostFields lists the paths of want's non-empty values that got lacks or
// holds differently.
func lostFields(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var lost []string
		for k, v := range w {
			if empty(v) {
				continue
			}
			lost = append(lost, lostFields(path+"."+k, v, g[k])...)
		}
		sort.Strings(lost)
		return lost
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			return []string{path}
		}
		var lost []string
		for i := range w {
			lost = append(lost, lostFields(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return lost
	}
	if !reflect.DeepEqual(want, got) {
		return []string{path}
	}
	return nil
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
