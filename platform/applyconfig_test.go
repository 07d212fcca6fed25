package platform

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/config"
)

const applyYAML = `
secrets:
  CRM_TOKEN: ${CRM_TOKEN}
knowledge_bases:
  - name: handbook
    chunk_size: 256
tools:
  - name: weather
    description: The weather in a city.
    kind: http
    http: {method: GET, url: "https://api.example.com/weather", headers: {Authorization: "Bearer ${secret:CRM_TOKEN}"}}
    parameters: {type: object, properties: {city: {type: string}}}
agents:
  - name: front
    system_prompt: You route questions.
    delegate_agent_ids: [support]
  - name: support
    model: scripted/echo
    knowledge_base_ids: [handbook]
    tool_ids: [weather]
    retrieval: {top_k: 3}
    timeouts: {turn_ms: 60000}
`

func parseApply(t *testing.T, y string) *config.File {
	t.Helper()
	f, err := config.Parse([]byte(y), "weft.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func actions(r config.Report) string {
	var out []string
	for _, c := range r {
		out = append(out, c.Kind+" "+c.Name+" "+c.Action)
	}
	return strings.Join(out, "; ")
}

// Applying a configuration creates its objects by name, resolves the
// references between them, changes nothing when applied again, and
// reports what it did.
func TestApplyConfigIdempotent(t *testing.T) {
	shop := filepath.Join(t.TempDir(), "shop.db") // for a SQL tool
	e := newEnv(t, nil, func(c *Config) { c.Getenv = func(k string) string { return map[string]string{"SHOP_DSN": shop}[k] } })
	env := config.Env{Getenv: func(k string) string { return map[string]string{"CRM_TOKEN": "crm-token-1234"}[k] }}
	ctx := context.Background()

	// In process, as weft serve --config does.
	rep, err := e.srv.applyConfig(ctx, parseApply(t, applyYAML), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep); got != "secret CRM_TOKEN created; knowledge_base handbook created; tool weather created; agent support created; agent front created" {
		t.Fatalf("first apply: %s", got)
	}
	var agents []map[string]any
	e.do(e.admin, "GET", "/v1/agents", nil, &agents)
	ids := map[string]string{}
	for _, a := range agents {
		ids[a["name"].(string)] = a["id"].(string)
	}
	var front, support struct {
		DelegateAgentIDs []string `json:"delegate_agent_ids"`
		ToolIDs          []string `json:"tool_ids"`
		KnowledgeBaseIDs []string `json:"knowledge_base_ids"`
	}
	e.do(e.admin, "GET", "/v1/agents/"+ids["front"], nil, &front)
	e.do(e.admin, "GET", "/v1/agents/"+ids["support"], nil, &support)
	if !slices.Equal(front.DelegateAgentIDs, []string{ids["support"]}) || len(support.ToolIDs) != 1 || !strings.HasPrefix(support.ToolIDs[0], "tool") || len(support.KnowledgeBaseIDs) != 1 {
		t.Fatalf("references: front %+v support %+v", front, support)
	}

	// Again, over HTTP with the admin key, as weft apply does: unchanged
	// (secrets are write-only, so they are set again).
	target := config.Target{BaseURL: e.http.URL, Key: e.admin}
	rep, err = config.Apply(ctx, target, parseApply(t, applyYAML), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep); got != "secret CRM_TOKEN updated; knowledge_base handbook unchanged; tool weather unchanged; agent front unchanged; agent support unchanged" {
		t.Fatalf("second apply: %s", got)
	}

	// A changed field updates the agent and the tool in place, keeping
	// their ids (the agent's tool_ids stay as they were); a knowledge
	// base's chunking cannot change, so it is left as it is and reported.
	changed := strings.Replace(applyYAML, "top_k: 3", "top_k: 4", 1)
	changed = strings.Replace(changed, "The weather in a city.", "The weather.", 1)
	changed = strings.Replace(changed, "chunk_size: 256", "chunk_size: 300", 1)
	rep, err = config.Apply(ctx, target, parseApply(t, changed), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep); got != "secret CRM_TOKEN updated; knowledge_base handbook differs; tool weather updated; agent front unchanged; agent support updated" {
		t.Fatalf("third apply: %s", got)
	}
	var sup2 struct {
		ID      string   `json:"id"`
		ToolIDs []string `json:"tool_ids"`
	}
	e.do(e.admin, "GET", "/v1/agents/"+ids["support"], nil, &sup2)
	if sup2.ID != ids["support"] || !slices.Equal(sup2.ToolIDs, support.ToolIDs) || rep[2].ID != support.ToolIDs[0] || rep[2].Note != "changed: description" {
		t.Fatalf("after the tool was updated: %+v (report %+v)", sup2, rep)
	}
	var weather struct{ Description string }
	e.do(e.admin, "GET", "/v1/tools/"+support.ToolIDs[0], nil, &weather)
	if weather.Description != "The weather." {
		t.Fatalf("tool after apply: %+v", weather)
	}
	if !strings.Contains(rep[1].Note, "chunk_size") {
		t.Errorf("knowledge base note %q", rep[1].Note)
	}
	// A tool whose kind changes cannot be updated in place: it is replaced,
	// and the report gives its new id.
	sqlKind := strings.Replace(changed, "    kind: http\n    http: {method: GET, url: \"https://api.example.com/weather\", headers: {Authorization: \"Bearer ${secret:CRM_TOKEN}\"}}",
		"    kind: sql\n    sql: {driver: sqlite, dsn_env: SHOP_DSN, query: 'SELECT 1'}", 1)
	if sqlKind == changed {
		t.Fatal("the kind was not replaced in the test's YAML")
	}
	rep, err = config.Apply(ctx, target, parseApply(t, sqlKind), env)
	if err != nil {
		t.Fatal(err)
	}
	if rep[2].Action != config.Updated || rep[2].ID == support.ToolIDs[0] || !strings.Contains(rep[2].Note, "replaced (new id "+rep[2].ID+"): kind cannot change in place") {
		t.Fatalf("kind change: %+v", rep[2])
	}

	// An invalid object stops the apply with the server's message.
	_, err = config.Apply(ctx, target, parseApply(t, "agents: [{name: bad, temperature: 7}]"), env)
	if err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Fatalf("invalid agent: %v", err)
	}
	// A missing variable is an error naming it, before anything is sent.
	_, err = config.Apply(ctx, target, parseApply(t, "secrets: {X: '${UNSET_VAR}'}"), config.Env{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "UNSET_VAR") {
		t.Fatalf("unset variable: %v", err)
	}
	// A tenant key cannot register what needs an admin key.
	var k keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "t"}, &k)
	_, err = config.Apply(ctx, config.Target{BaseURL: e.http.URL, Key: k.Key},
		parseApply(t, "tools: [{name: q, kind: sql, sql: {driver: sqlite, dsn_env: X, query: 'SELECT 1'}}]"), env)
	var ae *config.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("sql tool with a tenant key: %v", err)
	}
}

// Model aliases of the configuration name models for agents.
func TestModelAliases(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.ModelAliases = map[string]string{"fast": "scripted/echo"} })
	a := e.createAgent(e.admin, map[string]any{"name": "quick", "model": "fast"})
	var ans struct {
		Answer string `json:"answer"`
		Model  string `json:"model"`
	}
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hi"}, &ans)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "slow", "model": "slow"}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

// Two replicas started together apply the same file at the same moment:
// both succeed and each object exists once.
func TestApplyConfigConcurrent(t *testing.T) {
	e := newEnv(t, nil)
	env := config.Env{Getenv: func(k string) string { return map[string]string{"CRM_TOKEN": "crm-token-1234"}[k] }}
	target := config.Target{BaseURL: e.http.URL, Key: e.admin}
	for round, y := range []string{applyYAML, strings.Replace(applyYAML, "The weather in a city.", "The weather.", 1)} {
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := config.Apply(context.Background(), target, parseApply(t, y), env)
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		var agents, tools []map[string]any
		e.do(e.admin, "GET", "/v1/agents", nil, &agents)
		e.do(e.admin, "GET", "/v1/tools", nil, &tools)
		if len(agents) != 2 || len(tools) != 1 {
			t.Fatalf("round %d: %d agents, %d tools", round, len(agents), len(tools))
		}
	}
}
