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
