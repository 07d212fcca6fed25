package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/weftlabs/weft/provider/scripted"
)

// The HTTP contract is docs/openapi.yaml (with docs/api.md as its prose).
// These tests keep it true: every route the server registers is described
// and every described route exists, and every example in it is run against
// a real server, whose answer must have the described status and match the
// described schema.

// openapiFile is the description, relative to this package.
const openapiFile = "../docs/openapi.yaml"

// howToDocument ends every failure: what to edit.
const howToDocument = `
Document the route in docs/openapi.yaml (path, operation, request and response schemas, at least one
example) and in docs/api.md (a few lines of prose). Examples are run against a test server: the ids
of the fixtures (agt_support, tool_weather, kb_handbook, doc_faq, ses_support, msg_answer, wf_triage,
run_triage, wf_signoff, run_signoff (waiting), ses_paused, int_paused and call_paused (a turn waiting for approval), key_reader, key_admin, bud_monthly, secret CRM_TOKEN) are replaced by real ones; new kinds of fixture
go in openapiFixtures in platform/openapi_test.go. An example's x-status names the status it expects
(default: the response holding an example of the same name, else the one 2xx response), x-key
which key sends it (admin, tenant or none).`

// openapiDoc is the decoded description.
type openapiDoc struct {
	raw   map[string]any // as JSON would decode it, for the schema compiler
	Paths map[string]map[string]*operation
}

type operation struct {
	OperationID string `json:"operationId"`
	// Security is the operation's own requirement: an empty list means
	// no key.
	Security    *[]map[string][]string `json:"security"`
	Parameters  []parameter            `json:"parameters"`
	RequestBody *struct {
		Content map[string]mediaType `json:"content"`
	} `json:"requestBody"`
	Responses map[string]*struct {
		Ref     string               `json:"$ref"`
		Content map[string]mediaType `json:"content"`
	} `json:"responses"`
}

type parameter struct {
	Ref      string             `json:"$ref"`
	Name     string             `json:"name"`
	In       string             `json:"in"`
	Required bool               `json:"required"`
	Example  any                `json:"example"`
	Examples map[string]example `json:"examples"`
}

type mediaType struct {
	Schema   map[string]any     `json:"schema"`
	Example  any                `json:"example"`
	Examples map[string]example `json:"examples"`
}

type example struct {
	Ref    string `json:"$ref"`
	Value  any    `json:"value"`
	Status int    `json:"x-status"`
	Key    string `json:"x-key"`
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

func loadOpenAPI(t *testing.T) *openapiDoc {
	t.Helper()
	data, err := os.ReadFile(openapiFile)
	if err != nil {
		t.Fatalf("read the API description: %v%s", err, howToDocument)
	}
	var y any
	if err := yaml.Unmarshal(data, &y); err != nil {
		t.Fatalf("%s: %v", openapiFile, err)
	}
	js, err := json.Marshal(y)
	if err != nil {
		t.Fatalf("%s: not JSON-compatible: %v", openapiFile, err)
	}
	doc := &openapiDoc{Paths: map[string]map[string]*operation{}}
	if err := json.Unmarshal(js, &doc.raw); err != nil {
		t.Fatal(err)
	}
	if v, _ := doc.raw["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("%s: openapi = %q, want 3.1.x", openapiFile, v)
	}
	var shape struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(js, &shape); err != nil {
		t.Fatal(err)
	}
	for path, item := range shape.Paths {
		doc.Paths[path] = map[string]*operation{}
		var common []parameter // the path item's parameters, shared by its operations
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &common); err != nil {
				t.Fatalf("%s: %s parameters: %v", openapiFile, path, err)
			}
		}
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s: %s %s: %v", openapiFile, method, path, err)
			}
			op.Parameters = append(slices.Clone(common), op.Parameters...)
			doc.Paths[path][strings.ToUpper(method)] = &op
		}
	}
	return doc
}

// resolve follows a local $ref ("#/components/...") into out.
func (d *openapiDoc) resolve(t *testing.T, ref string, out any) {
	t.Helper()
	var cur any = d.raw
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: $ref %q does not resolve", openapiFile, ref)
		}
		if cur, ok = m[part]; !ok {
			t.Fatalf("%s: $ref %q does not resolve", openapiFile, ref)
		}
	}
	b, _ := json.Marshal(cur)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", openapiFile, ref, err)
	}
}

// routePattern matches a ServeMux pattern as written in a registration.
var routePattern = regexp.MustCompile(`^(?:(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) )?(/[^ ]*)$`)

// sourceRoutes finds the routes the platform's code registers: calls of a
// function or method whose name contains "handle" (s.handle, s.mux.Handle,
// HandleFunc, …) with a pattern literal as first argument, in every Go file
// of this package and the packages under it. The catch-all "/" (the 404
// answer) is left out.
func sourceRoutes(t *testing.T) map[string]string {
	t.Helper()
	routes := map[string]string{} // pattern → file:line
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			if !strings.Contains(strings.ToLower(name), "handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			p, err := strconv.Unquote(lit.Value)
			if err != nil || !routePattern.MatchString(p) || p == "/" {
				return true
			}
			routes[p] = fset.Position(lit.Pos()).String()
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

// openapiPath turns a ServeMux path into the description's: {name...}
// becomes {name}, and a trailing {$} goes.
func openapiPath(p string) string {
	p = strings.TrimSuffix(p, "{$}")
	return strings.ReplaceAll(p, "...}", "}")
}

// TestOpenAPICoversRoutes fails when a route is registered that the
// description lacks, or described that the server does not serve.
func TestOpenAPICoversRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	routes := sourceRoutes(t)
	if len(routes) < 20 {
		t.Fatalf("found only %d routes in the platform's code: the scan is broken", len(routes))
	}
	var missing []string
	for _, p := range sortedKeys(routes) {
		m := routePattern.FindStringSubmatch(p)
		method, path := m[1], openapiPath(m[2])
		ops, ok := doc.Paths[path]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s (registered at %s): path %s is not in the description", p, routes[p], path))
		case method == "" && len(ops) == 0:
			missing = append(missing, fmt.Sprintf("%s (registered at %s): path %s has no operation", p, routes[p], path))
		case method != "" && ops[method] == nil:
			missing = append(missing, fmt.Sprintf("%s (registered at %s): %s %s is not in the description", p, routes[p], method, path))
		}
	}
	if len(missing) > 0 {
		t.Errorf("routes the server registers but the API description lacks:\n  %s\n%s", strings.Join(missing, "\n  "), howToDocument)
	}

	// The reverse: each described operation reaches a route of that
	// pattern on a running server (not the 404 fallback).
	e := newEnv(t, nil)
	for path, ops := range doc.Paths {
		for method := range ops {
			target := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x")
			req := httptest.NewRequest(method, target, nil)
			_, pattern := e.srv.mux.Handler(req)
			if pattern == "" || pattern == "/" || openapiPath(strings.TrimPrefix(pattern, method+" ")) != path {
				t.Errorf("%s %s is described but the server does not serve it (it reaches pattern %q): remove it from %s or register the route", method, path, pattern, openapiFile)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// openapiFixtures are the objects every example runs among, created fresh
// for each example. The placeholders the description uses for their ids
// are replaced by the real ids in the example's path, query, headers and
// body.
type openapiFixtures struct {
	subst map[string]string // placeholder → real value
	keys  map[string]string // "admin", "tenant" → clear key
}

func newOpenAPIFixtures(t *testing.T, e *testEnv) *openapiFixtures {
	t.Helper()
	f := &openapiFixtures{subst: map[string]string{}, keys: map[string]string{"admin": e.admin}}
	must := func(resp *http.Response, want int, what string) {
		t.Helper()
		if resp.StatusCode != want {
			t.Fatalf("fixture %s: %d %s", what, resp.StatusCode, body(resp))
		}
	}
	var key keyResponse
	must(e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "reader"}, &key), 201, "api key")
	f.subst["key_reader"], f.keys["tenant"] = key.ID, key.Key
	f.subst["key_admin"], _, _ = parseKey(e.admin)
	if e.srv.accounting != nil {
		var b struct{ ID string }
		must(e.do(e.admin, "PUT", "/v1/budgets", map[string]any{"key_id": f.subst["key_admin"], "period": "month", "max_tokens": 1_000_000_000}, &b), 200, "budget")
		f.subst["bud_monthly"] = b.ID
	}

	must(e.do(e.admin, "PUT", "/v1/secrets/CRM_TOKEN", map[string]any{"value": "s3cr3t-token"}, nil), 201, "secret")

	var tool struct{ ID string }
	must(e.do(e.admin, "POST", "/v1/tools", map[string]any{
		"name": "weather", "description": "The weather in a city.", "kind": "http",
		"http":       map[string]any{"method": "GET", "url": "https://api.example.com/weather"},
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}, &tool), 201, "tool")
	f.subst["tool_weather"] = tool.ID

	var kb struct{ ID string }
	must(e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook"}, &kb), 201, "knowledge base")
	f.subst["kb_handbook"] = kb.ID
	var doc struct{ ID string }
	must(e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{
		"name": "faq.md", "content": "# Refunds\n\nRefunds are paid within 14 days of a return.",
	}, &doc), 202, "document")
	f.subst["doc_faq"] = doc.ID
	for deadline := time.Now().Add(20 * time.Second); ; {
		var d struct{ Status string }
		e.do(e.admin, "GET", "/v1/knowledge-bases/"+kb.ID+"/documents/"+doc.ID, nil, &d)
		if d.Status == "ready" {
			break
		}
		if d.Status == "failed" || time.Now().After(deadline) {
			t.Fatalf("fixture document: status %q", d.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}

	a := e.createAgent(e.admin, map[string]any{
		"name": "support", "system_prompt": "You answer questions about our shop.",
		"knowledge_base_ids": []string{kb.ID}, "tool_ids": []string{tool.ID},
	})
	f.subst["agt_support"] = a.ID
	// A second version (the same configuration), so that rollback and
	// diff have one before the published one.
	must(e.do(e.admin, "PUT", "/v1/agents/"+a.ID, map[string]any{"system_prompt": "You answer questions about our shop."}, nil), 200, "agent version 2")
	var ans struct {
		SessionID string `json:"session_id"`
		MessageID string `json:"message_id"`
	}
	must(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "How long do refunds take?"}, &ans), 200, "chat")
	f.subst["ses_support"], f.subst["msg_answer"] = ans.SessionID, ans.MessageID

	var wf struct{ ID string }
	must(e.do(e.admin, "POST", "/v1/workflows", map[string]any{"name": "triage", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"question": map[string]any{"type": "string"}}},
		map[string]any{"id": "draft", "kind": "template", "template": "Q: {{ inputs.question }}"},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"answer": "{{ nodes.draft.outputs.text }}"}},
	}}, &wf), 201, "workflow")
	f.subst["wf_triage"] = wf.ID
	var run struct{ ID string }
	must(e.do(e.admin, "POST", "/v1/workflows/"+wf.ID+"/runs", map[string]any{"inputs": map[string]any{"question": "Refunds?"}}, &run), 200, "workflow run")
	f.subst["run_triage"] = run.ID
	// A run waiting at a human node.
	must(e.do(e.admin, "POST", "/v1/workflows", map[string]any{"name": "signoff", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "approve", "kind": "human", "depends_on": []string{"start"}, "message": "Approve the refund?", "output_schema": map[string]any{"type": "object", "required": []string{"ok"},
			"properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "note": map[string]any{"type": "string"}}}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"ok": "{{ nodes.approve.outputs.ok }}"}},
	}}, &wf), 201, "workflow with a human node")
	f.subst["wf_signoff"] = wf.ID
	var waiting struct{ ID, Status string }
	must(e.do(e.admin, "POST", "/v1/workflows/"+wf.ID+"/runs", map[string]any{}, &waiting), 200, "waiting workflow run")
	if waiting.Status != "waiting" {
		t.Fatalf("fixture waiting run: status %q", waiting.Status)
	}
	f.subst["run_signoff"] = waiting.ID
	// A turn paused for approval of a call of the weather tool.
	desk := e.createAgent(e.admin, map[string]any{"name": "desk", "tool_ids": []string{tool.ID}, "tool_approvals": map[string]string{"weather": "always"}})
	var paused struct {
		SessionID string `json:"session_id"`
		Interrupt *struct {
			ID    string
			Calls []struct{ ID string }
		} `json:"interrupt"`
	}
	must(e.do(e.admin, "POST", "/v1/agents/"+desk.ID+"/chat", map[string]any{"query": "pause: the weather in Paris?"}, &paused), 200, "paused turn")
	if paused.Interrupt == nil || len(paused.Interrupt.Calls) != 1 {
		t.Fatalf("fixture paused turn: %+v", paused)
	}
	f.subst["ses_paused"], f.subst["int_paused"], f.subst["call_paused"] = paused.SessionID, paused.Interrupt.ID, paused.Interrupt.Calls[0].ID
	return f
}

// apply replaces the placeholders in s.
func (f *openapiFixtures) apply(s string) string {
	for _, k := range sortedKeys(f.subst) {
		s = strings.ReplaceAll(s, k, f.subst[k])
	}
	return s
}

// schemaCompiler compiles schemas of the description, references and all.
type schemaCompiler struct {
	c   *jsonschema.Compiler
	doc *openapiDoc
}

const openapiURL = "https://weft.invalid/openapi.json"

func newSchemaCompiler(t *testing.T, doc *openapiDoc) *schemaCompiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// Through JSON again, so that numbers are what the compiler expects.
	b, _ := json.Marshal(doc.raw)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(openapiURL, v); err != nil {
		t.Fatal(err)
	}
	return &schemaCompiler{c: c, doc: doc}
}

// pointer escapes a JSON pointer token.
func pointer(parts ...string) string {
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return "#/" + strings.Join(parts, "/")
}

// validate checks the JSON value v against the schema at ptr.
func (sc *schemaCompiler) validate(ptr string, v []byte) error {
	s, err := sc.c.Compile(openapiURL + ptr)
	if err != nil {
		return fmt.Errorf("compile %s: %w", ptr, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(inst)
}

// openapiExample is one request to run: an operation with the values of
// one named example.
type openapiExample struct {
	method, path, name string
	op                 *operation
	params             []parameter
	body               any // nil: no body
	hasBody            bool
	status             int
	key                string
}

// examples lists the runnable examples of the description, each with the
// status it expects.
func (d *openapiDoc) examples(t *testing.T) ([]openapiExample, []string) {
	t.Helper()
	var out []openapiExample
	var problems []string
	for _, path := range sortedKeys(d.Paths) {
		for _, method := range sortedKeys(d.Paths[path]) {
			op := d.Paths[path][method]
			where := method + " " + path
			params := make([]parameter, len(op.Parameters))
			for i, p := range op.Parameters {
				if p.Ref != "" {
					d.resolve(t, p.Ref, &p)
				}
				params[i] = p
			}
			names := map[string]example{}
			var reqJSON *mediaType
			if op.RequestBody != nil {
				if mt, ok := op.RequestBody.Content["application/json"]; ok {
					reqJSON = &mt
					for n, ex := range mt.Examples {
						if ex.Ref != "" {
							d.resolve(t, ex.Ref, &ex)
						}
						names[n] = ex
					}
				}
			}
			for _, p := range params {
				for n, ex := range p.Examples {
					if ex.Ref != "" {
						d.resolve(t, ex.Ref, &ex)
					}
					if cur, ok := names[n]; ok {
						ex.Status, ex.Key = max(ex.Status, cur.Status), cmpOr(cur.Key, ex.Key)
						ex.Value = cur.Value
					}
					names[n] = ex
				}
			}
			if len(names) == 0 {
				ex := example{}
				if reqJSON != nil {
					ex.Value = reqJSON.Example
				}
				names[""] = ex
			}
			for _, n := range sortedKeys(names) {
				ex := names[n]
				x := openapiExample{method: method, path: path, name: n, op: op, status: ex.Status, key: ex.Key}
				label := where
				if n != "" {
					label += " (example " + n + ")"
				}
				if x.key == "" {
					x.key = "admin"
					if op.Security != nil && len(*op.Security) == 0 {
						x.key = "none"
					}
				}
				if reqJSON != nil {
					x.hasBody = true
					// The body of the example's name, else the body's
					// example, else its first named example.
					x.body = nil
					if body, ok := reqJSON.Examples[n]; ok {
						x.body = body.Value
					} else if reqJSON.Example != nil {
						x.body = reqJSON.Example
					} else if len(reqJSON.Examples) > 0 {
						x.body = reqJSON.Examples[sortedKeys(reqJSON.Examples)[0]].Value
					}
					if x.body == nil {
						problems = append(problems, label+": no request body example")
						continue
					}
				}
				// The parameters' values for this example.
				for _, p := range params {
					// The parameter's example of the example's name, else
					// its example, else its example named "default".
					v := p.Example
					if pe, ok := p.Examples[n]; ok {
						v = pe.Value
					} else if pe, ok := p.Examples["default"]; ok && v == nil {
						v = pe.Value
					}
					if v == nil {
						if p.Required || p.In == "path" {
							problems = append(problems, fmt.Sprintf("%s: parameter %q has no example", label, p.Name))
						}
						continue
					}
					q := p
					q.Example = v
					x.params = append(x.params, q)
				}
				if x.status == 0 {
					for code, r := range op.Responses {
						if r.Ref != "" {
							d.resolve(t, r.Ref, r)
						}
						for _, mt := range r.Content {
							if _, ok := mt.Examples[n]; ok && n != "" {
								x.status, _ = strconv.Atoi(code)
							}
						}
					}
				}
				if x.status == 0 {
					var ok2xx []int
					for code := range op.Responses {
						if c, err := strconv.Atoi(code); err == nil && c >= 200 && c < 300 {
							ok2xx = append(ok2xx, c)
						}
					}
					if len(ok2xx) != 1 {
						problems = append(problems, fmt.Sprintf("%s: cannot tell which status the example expects (2xx responses: %v): give it x-status", label, ok2xx))
						continue
					}
					x.status = ok2xx[0]
				}
				out = append(out, x)
			}
		}
	}
	return out, problems
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestOpenAPIExamples checks the description's examples: each request and
// response example against its schema, and each request against a real
// server, whose answer must have the expected status and match the
// described schema of that status.
func TestOpenAPIExamples(t *testing.T) {
	doc := loadOpenAPI(t)
	sc := newSchemaCompiler(t, doc)

	// Every example value matches its schema.
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for code, r := range op.Responses {
				if r.Ref != "" {
					continue // checked where it is defined
				}
				for ct, mt := range r.Content {
					checkMediaExamples(t, sc, method+" "+path+" "+code, mt, pointer("paths", path, strings.ToLower(method), "responses", code, "content", ct, "schema"), ct)
				}
			}
		}
	}

	exs, problems := doc.examples(t)
	for _, p := range problems {
		t.Error(p)
	}
	ran := map[string]bool{}
	for _, x := range exs {
		label := x.method + " " + x.path
		if x.name != "" {
			label += "/" + x.name
		}
		t.Run(strings.ReplaceAll(label, "/", "_"), func(t *testing.T) {
			runOpenAPIExample(t, sc, x)
		})
		ran[x.method+" "+x.path] = true
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if !ran[method+" "+path] {
				t.Errorf("%s %s has no runnable example", method, path)
			}
		}
	}
	if t.Failed() {
		t.Log(howToDocument)
	}
}

// checkMediaExamples validates the examples of one media type.
func checkMediaExamples(t *testing.T, sc *schemaCompiler, where string, mt mediaType, schemaPtr, contentType string) {
	t.Helper()
	if mt.Schema == nil || !strings.Contains(contentType, "json") {
		return
	}
	check := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := sc.validate(schemaPtr, b); err != nil {
			t.Errorf("%s: example %s does not match its schema: %v", where, name, err)
		}
	}
	if mt.Example != nil {
		check("(example)", mt.Example)
	}
	for n, ex := range mt.Examples {
		if ex.Ref != "" {
			sc.doc.resolve(t, ex.Ref, &ex)
		}
		if ex.Value != nil {
			check(n, ex.Value)
		}
	}
}

func runOpenAPIExample(t *testing.T, sc *schemaCompiler, x openapiExample) {
	var opts []envOption
	users := strings.HasPrefix(x.path, "/v1/users/")
	if users {
		opts = append(opts, func(c *Config) { c.DefaultEmbeddingModel = "scripted/embed" })
	}
	e := newEnv(t, scripted.New(scripted.CallToolWhen(regexp.MustCompile(`^pause:`), "weather", `{"city":"Paris"}`), scripted.Echo()), opts...)
	f := newOpenAPIFixtures(t, e)
	if users {
		// End user ada has a memory, mem_home.
		if resp := e.do(f.keys["tenant"], "PUT", "/v1/users/ada/memories/mem_home", map[string]any{"text": "Lives in Berlin."}, nil); resp.StatusCode != http.StatusCreated {
			t.Fatalf("fixture memory: %d %s", resp.StatusCode, body(resp))
		}
	}

	path := x.path
	q := url.Values{}
	hdr := http.Header{}
	for _, p := range x.params {
		v := f.apply(fmt.Sprint(p.Example))
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
		case "query":
			q.Set(p.Name, v)
		case "header":
			hdr.Set(p.Name, v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var rd io.Reader
	if x.hasBody {
		b, _ := json.Marshal(x.body)
		// A request meant to succeed is valid; one meant to fail may not be.
		if x.status < 400 {
			if err := sc.validate(pointer("paths", x.path, strings.ToLower(x.method), "requestBody", "content", "application/json", "schema"), b); err != nil {
				t.Errorf("the request example does not match the request schema: %v", err)
			}
		}
		rd = strings.NewReader(f.apply(string(b)))
	}
	req, err := http.NewRequestWithContext(context.Background(), x.method, e.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	if x.hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	switch x.key {
	case "none":
	case "admin", "tenant":
		req.Header.Set("Authorization", "Bearer "+f.keys[x.key])
	default:
		t.Fatalf("x-key %q: want admin, tenant or none", x.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != x.status {
		t.Fatalf("%s %s: status %d, the description expects %d; body: %.600s", x.method, path, resp.StatusCode, x.status, got)
	}
	checkAudited(t, e, req, resp)
	code := strconv.Itoa(resp.StatusCode)
	r := x.op.Responses[code]
	ptr := pointer("paths", x.path, strings.ToLower(x.method), "responses", code)
	if r == nil {
		r, ptr = x.op.Responses["default"], pointer("paths", x.path, strings.ToLower(x.method), "responses", "default")
	}
	if r == nil {
		t.Fatalf("status %d is not described", resp.StatusCode)
	}
	if r.Ref != "" {
		sc.doc.resolve(t, r.Ref, r)
		ptr = r.Ref
	}
	if len(r.Content) == 0 {
		if len(got) > 0 {
			t.Fatalf("the description says no body, the server sent %.300s", got)
		}
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	mt, ok := r.Content[ct]
	if !ok {
		t.Fatalf("content type %q is not among the described %v", ct, sortedKeys(r.Content))
	}
	if mt.Schema == nil || !strings.Contains(ct, "json") {
		return
	}
	if err := sc.validate(ptr+"/content/"+strings.ReplaceAll(ct, "/", "~1")+"/schema", got); err != nil {
		t.Fatalf("the answer does not match the described schema: %v\nbody: %.1000s", err, got)
	}
}

// checkAudited: a change that succeeded left its record in the audit log
// (see audit.go), unless its route is a use of the platform.
func checkAudited(t *testing.T, e *testEnv, req *http.Request, resp *http.Response) {
	t.Helper()
	_, pattern := e.srv.mux.Handler(req)
	a, ok := e.srv.access[pattern]
	if !ok || resp.StatusCode >= 300 || !a.audited(req.Method) {
		return
	}
	rid := resp.Header.Get("X-Request-Id")
	for _, r := range e.auditOf(e.admin, "") {
		if r.RequestID == rid {
			// An end user's id is recorded as its hash (TestAuditEndUser).
			samePath := r.Path == req.URL.Path || strings.Contains(pattern, "{user}")
			if r.Route != pattern || r.Status != resp.StatusCode || !samePath {
				t.Errorf("%s %s: the audit record says %s %s %d", req.Method, req.URL.Path, r.Route, r.Path, r.Status)
			}
			return
		}
	}
	t.Errorf("%s %s answered %d and left no record in the audit log (request %s)", req.Method, req.URL.Path, resp.StatusCode, rid)
}

// checkedElsewhere are the changes no example can make succeed on the
// fixtures, with the test that checks their audit record.
var checkedElsewhere = map[string]string{
	"POST /v1/tools/{id}/refresh": "TestMCPRefreshFollowsTheServer", // needs a live MCP server
}

// TestAuditCoversMutatingRoutes walks the API description: every operation
// that changes something (not a GET, not a use of the platform such as a
// turn) has an example that succeeds, which TestOpenAPIExamples runs and
// checks for its audit record (checkAudited).
func TestAuditCoversMutatingRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newEnv(t, nil)
	exs, _ := doc.examples(t)
	succeeds := map[string]bool{}
	for _, x := range exs {
		if x.status < 300 {
			succeeds[x.method+" "+x.path] = true
		}
	}
	n := 0
	for path, ops := range doc.Paths {
		for method := range ops {
			target := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x")
			_, pattern := e.srv.mux.Handler(httptest.NewRequest(method, target, nil))
			a, ok := e.srv.access[pattern]
			if !ok || !a.audited(method) {
				continue
			}
			n++
			if checkedElsewhere[pattern] != "" {
				continue
			}
			if !succeeds[method+" "+path] {
				t.Errorf("%s %s changes things but has no example that succeeds: its audit record is unchecked", method, path)
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d audited operations found: the walk is broken", n)
	}
}
