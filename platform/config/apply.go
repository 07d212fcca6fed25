package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// The actions of a Change.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	// Differs is a declared object that differs from the stored one in a
	// field that cannot be changed in place without losing data (a
	// knowledge base's chunking or embedding model): it is left as it is,
	// and Note says what to do.
	Differs = "differs"
)

// Change is what applying did to one object.
type Change struct {
	Kind   string `json:"kind"` // "agent", "tool", "knowledge_base", "secret", "workflow"
	Name   string `json:"name"`
	Action string `json:"action"`
	ID     string `json:"id,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Report lists the changes of an apply, in the order they were made.
type Report []Change

// Count returns how many changes had the action.
func (r Report) Count(action string) int {
	n := 0
	for _, c := range r {
		if c.Action == action {
			n++
		}
	}
	return n
}

// Target is the server a configuration is applied to: its API at BaseURL,
// with an API key (an admin key, to register SQL tools and stdio MCP
// servers). HTTP nil means http.DefaultClient.
type Target struct {
	BaseURL string
	Key     string
	HTTP    *http.Client
}

// kind is a collection of objects applied by name through the API.
type kind struct {
	section string // the file's section
	label   string // the Change kind
	path    string // the collection route
	// update: PUT path/{id} changes an object in place, keeping its id.
	update bool
	// fixed are the fields PUT cannot change. An object that differs in
	// one is deleted and created again (a new id) when replace is set
	// (a tool's kind), and otherwise left as it is and reported as Differs
	// (a knowledge base's chunking: its documents would be lost).
	fixed   []string
	replace bool
	// refs are the fields that name objects of other sections.
	refs map[string]string
}

// Kinds lists the collections Apply knows, in the order it applies them
// (an object's references come before it). A new collection of the API
// that is managed by name (GET list, POST create, PUT {id} update) joins
// by adding an entry here and its section to File.
var kinds = []kind{
	{section: "knowledge_bases", label: "knowledge_base", path: "/v1/knowledge-bases", update: true,
		fixed: []string{"chunk_size", "chunk_overlap", "embedding_model"}},
	{section: "tools", label: "tool", path: "/v1/tools", update: true, fixed: []string{"kind"}, replace: true},
	// Workflows name agents, knowledge bases and tools by name, resolved
	// when they run; agents refer to workflows (workflow_ids) by id.
	{section: "workflows", label: "workflow", path: "/v1/workflows", update: true},
	{section: "agents", label: "agent", path: "/v1/agents", update: true,
		refs: map[string]string{"knowledge_base_ids": "knowledge_bases", "tool_ids": "tools", "delegate_agent_ids": "agents", "workflow_ids": "workflows"}},
}

// Apply makes the server's objects match f's declarations and reports
// what it changed. Secrets come first, then knowledge bases, tools,
// workflows and agents. It stops at the first error, with the changes made so far.
// Declarations only the server reads (default_model, providers, models)
// are not applied here.
func Apply(ctx context.Context, t Target, f *File, env Env) (Report, error) {
	if t.HTTP == nil {
		t.HTTP = http.DefaultClient
	}
	a := &applier{t: t, ids: map[string]map[string]string{}}
	if err := a.secrets(ctx, f.Secrets, env); err != nil {
		return a.report, err
	}
	objs := f.objects()
	for _, k := range kinds {
		if len(objs[k.section]) == 0 {
			continue
		}
		if err := a.apply(ctx, k, objs[k.section]); err != nil {
			return a.report, err
		}
	}
	return a.report, nil
}

type applier struct {
	t      Target
	report Report
	// ids maps, per section, names (and ids) to ids, as listed.
	ids map[string]map[string]string
}

// APIError is a failed API call.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
	}
	return fmt.Sprintf("status %d", e.Status)
}

// call sends one API request; out, when not nil, receives the JSON answer.
func (a *applier) call(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(a.t.BaseURL, "/")+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.t.Key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.t.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := readLimited(resp.Body, 64<<20, method+" "+path)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(data, &eb)
		return resp.StatusCode, &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out != nil && len(data) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func (a *applier) secrets(ctx context.Context, secrets map[string]string, env Env) error {
	if len(secrets) == 0 {
		return nil
	}
	for _, name := range sortedKeys(secrets) {
		v, err := env.Expand(secrets[name])
		if err != nil {
			return fmt.Errorf("secret %s: %w", name, err)
		}
		status, err := a.call(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(name), map[string]string{"value": v}, nil)
		if err != nil {
			return fmt.Errorf("secret %s: %w", name, err)
		}
		c := Change{Kind: "secret", Name: name, Action: Created}
		if status == http.StatusOK {
			c.Action, c.Note = Updated, "secret values are write-only: set again"
		}
		a.report = append(a.report, c)
	}
	return nil
}

// list returns the collection's objects by name, and records their ids.
func (a *applier) list(ctx context.Context, k kind) (map[string]map[string]any, error) {
	var objs []map[string]any
	if _, err := a.call(ctx, http.MethodGet, k.path, nil, &objs); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return nil, fmt.Errorf("%s: this server has no %s route (%w)", k.section, k.path, err)
		}
		return nil, fmt.Errorf("%s: %w", k.section, err)
	}
	byName := map[string]map[string]any{}
	ids := map[string]string{}
	for _, o := range objs {
		id, _ := o["id"].(string)
		name, _ := o["name"].(string)
		if kind, _ := o["kind"].(string); kind == "mcp_tool" {
			ids[id] = id // referable by id and name, never declared
		} else {
			byName[name] = o
		}
		ids[id] = id
		if _, isID := ids[name]; !isID {
			ids[name] = id
		}
	}
	a.ids[k.section] = ids
	return byName, nil
}

func (a *applier) apply(ctx context.Context, k kind, decl []Object) error {
	current, err := a.list(ctx, k)
	if err != nil {
		return err
	}
	// A new agent may name agents declared after it: pass one creates
	// new objects without those references, pass two sets them.
	deferred := map[string]bool{}
	for _, d := range decl {
		name := d.Name()
		if _, ok := current[name]; ok {
			continue
		}
		create := Object{}
		for f, v := range d {
			if sec, ok := k.refs[f]; ok && sec == k.section {
				deferred[name] = true
				continue
			}
			create[f] = v
		}
		var got map[string]any
		_, err := a.call(ctx, http.MethodPost, k.path, create, &got)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			// Another replica applying the same file created it first.
			if current, err = a.list(ctx, k); err != nil {
				return err
			}
			if _, ok := current[name]; ok {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("%s %q: %w", k.label, name, err)
		}
		id, _ := got["id"].(string)
		current[name] = got
		a.ids[k.section][name], a.ids[k.section][id] = id, id
		if !deferred[name] {
			a.report = append(a.report, Change{Kind: k.label, Name: name, Action: Created, ID: id})
		}
	}
	for _, d := range decl {
		name := d.Name()
		cur := current[name]
		id, _ := cur["id"].(string)
		diff := a.differences(k, d, cur)
		if !deferred[name] && len(diff) == 0 {
			if !slices.ContainsFunc(a.report, func(c Change) bool { return c.Kind == k.label && c.Name == name }) {
				a.report = append(a.report, Change{Kind: k.label, Name: name, Action: Unchanged, ID: id})
			}
			continue
		}
		action := Updated
		if deferred[name] {
			action = Created
		}
		var fixed []string
		for _, f := range diff {
			if slices.Contains(k.fixed, f) {
				fixed = append(fixed, f)
			}
		}
		switch {
		case k.update && len(fixed) == 0:
			var got map[string]any
			if _, err := a.call(ctx, http.MethodPut, k.path+"/"+url.PathEscape(id), d, &got); err != nil {
				return fmt.Errorf("%s %q: %w", k.label, name, err)
			}
			a.report = append(a.report, Change{Kind: k.label, Name: name, Action: action, ID: id, Note: note(diff)})
		case k.replace:
			// Another replica applying the same file at the same moment may
			// have replaced it already: its delete leaves ours a 404, its
			// create makes ours a 409, and the result is the same.
			if _, err := a.call(ctx, http.MethodDelete, k.path+"/"+url.PathEscape(id), nil, nil); err != nil && !isStatus(err, http.StatusNotFound) {
				return fmt.Errorf("%s %q: %w", k.label, name, err)
			}
			var got map[string]any
			if _, err := a.call(ctx, http.MethodPost, k.path, d, &got); isStatus(err, http.StatusConflict) {
				if current, err = a.list(ctx, k); err != nil {
					return err
				}
				got = current[name]
			} else if err != nil {
				return fmt.Errorf("%s %q: %w", k.label, name, err)
			}
			newID, _ := got["id"].(string)
			a.ids[k.section][name], a.ids[k.section][newID] = newID, newID
			a.report = append(a.report, Change{Kind: k.label, Name: name, Action: action, ID: newID,
				Note: note(diff) + "; replaced (new id " + newID + "): " + strings.Join(fixed, ", ") + " cannot change in place"})
		default:
			a.report = append(a.report, Change{Kind: k.label, Name: name, Action: Differs, ID: id,
				Note: note(diff) + "; left as it is (changing " + strings.Join(fixed, ", ") + " would drop its documents): delete it to re-create it"})
		}
	}
	return nil
}

// isStatus reports whether err is an API answer of that status.
func isStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// differences lists the declared fields whose value differs from the
// stored object's; references are compared as ids.
func (a *applier) differences(k kind, decl Object, cur map[string]any) []string {
	var out []string
	for _, f := range sortedKeys(decl) {
		want := normalize(decl[f])
		if sec, ok := k.refs[f]; ok {
			if list, ok := want.([]any); ok {
				mapped := make([]any, len(list))
				for i, v := range list {
					s, _ := v.(string)
					if id, ok := a.ids[sec][s]; ok {
						s = id
					}
					mapped[i] = s
				}
				want = mapped
			}
		}
		if !subset(want, normalize(cur[f])) {
			out = append(out, f)
		}
	}
	return out
}

// subset reports whether want is got, where an object need only match on
// the keys it declares (the server fills in defaults).
func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return len(wm) == 0 && got == nil
	}
	for k, v := range wm {
		if !subset(v, gm[k]) {
			return false
		}
	}
	return true
}

// normalize makes a value comparable: through JSON, numbers as float64.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

func note(diff []string) string {
	if len(diff) == 0 {
		return ""
	}
	return "changed: " + strings.Join(diff, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
