package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

// TestWorkflowCommands: weft workflow apply saves a YAML definition (a new
// version when applied again changed), a bad one fails naming the node,
// list shows it, run prints its outputs and runs lists the run.
func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	ctx := t.Context()
	dir := t.TempDir()
	file := filepath.Join(dir, "echo.yaml")
	def := "name: echo\nnodes:\n  - {id: start, kind: start, inputs: {text: {type: string}}}\n" +
		"  - {id: shout, kind: template, template: \"You said: {{ inputs.text }}\"}\n" +
		"  - {id: end, kind: end, outputs: {reply: \"{{ nodes.shout.outputs.text }}\"}}\n"
	os.WriteFile(file, []byte(def), 0o600)
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "apply", "-f", file); r.code != 0 || !strings.Contains(r.stdout, "workflow echo created") {
		t.Fatalf("apply: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(file, []byte(strings.Replace(def, "You said", "Heard", 1)), 0o600)
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "apply", "-f", file); r.code != 0 || !strings.Contains(r.stdout, "updated") || !strings.Contains(r.stdout, "version 2") {
		t.Fatalf("apply again: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(strings.Replace(def, "inputs.text", "inputs.txet", 1), "name: echo", "name: bad", 1)), 0o600)
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "apply", "-f", bad); r.code == 0 || !strings.Contains(r.stderr, "shout") {
		t.Fatalf("bad apply: code %d stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "list"); r.code != 0 || !strings.Contains(r.stdout, "echo") || strings.Contains(r.stdout, "bad") {
		t.Fatalf("list: code %d stdout %q", r.code, r.stdout)
	}
	r := runCLI(t, ctx, p.vars(), "", "workflow", "run", "echo", "--input", "text=hi")
	var out map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out["reply"] != "Heard: hi" {
		t.Fatalf("run: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, ctx, p.vars(), "", "workflow", "runs", "echo", "--json")
	var runs []client.WorkflowRun
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &runs) != nil || len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Fatalf("runs: code %d stdout %q", r.code, r.stdout)
	}
}

// TestWorkflowResumeCommand: a run that waits prints its question and the
// command that answers it; runs lists it waiting; resume with a refused
// answer names the field and leaves it waiting, a fitting one finishes
// the run, a second one says it was answered with the stored answer.
func TestWorkflowResumeCommand(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	ctx := t.Context()
	file := filepath.Join(t.TempDir(), "approve.yaml")
	os.WriteFile(file, []byte("name: approve\nnodes:\n  - {id: start, kind: start, inputs: {amount: {type: number}}}\n"+
		"  - {id: ask, kind: human, depends_on: [start], message: \"Pay {{ inputs.amount }}?\", output_schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}}\n"+
		"  - {id: end, kind: end, outputs: {ok: \"{{ nodes.ask.outputs.ok }}\"}}\n"), 0o600)
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r := runCLI(t, ctx, p.vars(), "", "workflow", "run", "approve", "--input", "amount=40")
	if r.code != 0 || !strings.Contains(r.stdout, "is waiting") || !strings.Contains(r.stdout, "Pay 40?") || !strings.Contains(r.stdout, "weft workflow resume ") {
		t.Fatalf("run: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, ctx, p.vars(), "", "workflow", "runs", "approve", "--json")
	var runs []client.WorkflowRun
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &runs) != nil || len(runs) != 1 || runs[0].Status != "waiting" {
		t.Fatalf("runs: code %d stdout %q", r.code, r.stdout)
	}
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "runs", "approve"); !strings.Contains(r.stdout, "waiting") {
		t.Fatalf("runs table %q", r.stdout)
	}
	run := runs[0].ID
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "resume", run, "ask", "--answer", `{"ok": "yes"}`); r.code == 0 || !strings.Contains(r.stderr, "answer.ok") {
		t.Fatalf("bad answer: code %d stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, ctx, p.vars(), "", "workflow", "resume", run, "ask", "--answer", `{"ok": true}`)
	var out map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out["ok"] != true {
		t.Fatalf("resume: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "resume", run, run+":ask", "--workflow", "approve", "--answer", `{"ok": false}`); r.code == 0 || !strings.Contains(r.stderr, "answered already") || !strings.Contains(r.stderr, `{"ok":true}`) {
		t.Fatalf("second answer: code %d stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "workflow", "resume", run, "ask", "--answer", `{"ok": false}`); r.code == 0 || !strings.Contains(r.stderr, "waits for no answer") {
		t.Fatalf("no open question: code %d stderr %q", r.code, r.stderr)
	}
}
