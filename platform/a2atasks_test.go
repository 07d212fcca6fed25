package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/a2a"
	"github.com/weftlabs/weft/platform/meta"
)

// withSlowModel makes agents of model "scripted/slow" talk through slow
// (until their turn is cancelled); other agents echo.
func withSlowModel(slow *slowModel) envOption {
	return func(c *Config) {
		open := c.OpenModel
		c.OpenModel = func(spec string) (*llm.Model, error) {
			if spec == "scripted/slow" {
				return llm.New(slow, llm.WithName(spec), llm.WithRetries(0)), nil
			}
			return open(spec)
		}
	}
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// restarted is another Server over e's stores, as after a restart: it
// holds none of e's tasks in memory.
func restarted(t *testing.T, e *testEnv) *testEnv {
	t.Helper()
	cfg := e.srv.cfg
	cfg.Instance = ""
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return &testEnv{t: t, srv: srv, http: hs, admin: e.admin}
}

// answerText is the text of a task's answer artifact.
func answerText(task map[string]any) string {
	arts, _ := task["artifacts"].([]any)
	if len(arts) != 1 {
		return ""
	}
	parts, _ := path(arts[0], "parts").([]any)
	if len(parts) != 1 {
		return ""
	}
	s, _ := path(parts[0], "text").(string)
	return s
}

func wantTaskError(t *testing.T, what string, ans rpcAnswer, code int) {
	t.Helper()
	if ans.Error == nil || ans.Error.Code != code || ans.Result != nil {
		t.Fatalf("%s = %+v (error %+v), want error %d", what, ans, ans.Error, code)
	}
}

// A task is read and cancelled through any replica: replica B answers
// tasks/get of a task A ran from the store, and tasks/cancel of a task A
// runs cancels A's turn through the bus; A ends it canceled.
func TestA2ATasksAcrossReplicas(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	a, b := replicas(t, withSlowModel(slow))
	agEcho := a.createAgent(a.admin, map[string]any{"name": "echo"})
	a.createAgent(a.admin, map[string]any{"name": "slow", "model": "scripted/slow"})

	_, ans := a.rpc(a.admin, "echo", call("SendMessage", map[string]any{"message": userMessage("remember this", "")}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	if path(ans.Result, "task", "status", "state") != "TASK_STATE_COMPLETED" || taskID == "" {
		t.Fatalf("SendMessage on A = %+v", ans)
	}
	_, ans = b.rpc(b.admin, agEcho.ID, call("GetTask", map[string]any{"id": taskID}))
	hist, _ := ans.Result["history"].([]any)
	if ans.Error != nil || ans.Result["id"] != taskID || path(ans.Result, "status", "state") != "TASK_STATE_COMPLETED" ||
		answerText(ans.Result) != "remember this" || len(hist) != 2 || path(ans.Result, "status", "message", "role") != "ROLE_AGENT" {
		t.Fatalf("GetTask on B = %+v", ans)
	}
	_, ans = b.rpc(b.admin, "echo", call("CancelTask", map[string]any{"id": taskID}))
	wantTaskError(t, "CancelTask of a completed task on B", ans, a2a.CodeTaskNotCancelable)
	// Another agent's endpoint, another tenant: not found.
	_, ans = b.rpc(b.admin, "slow", call("GetTask", map[string]any{"id": taskID}))
	wantTaskError(t, "GetTask at another agent", ans, a2a.CodeTaskNotFound)
	other := b.tenantKey("other")
	b.createAgent(other, map[string]any{"name": "echo"})
	_, ans = b.rpc(other, "echo", call("GetTask", map[string]any{"id": taskID}))
	wantTaskError(t, "GetTask of another tenant", ans, a2a.CodeTaskNotFound)
	_, ans = b.rpc(other, "echo", call("CancelTask", map[string]any{"id": taskID}))
	wantTaskError(t, "CancelTask of another tenant", ans, a2a.CodeTaskNotFound)

	// A task running on A, cancelled through B.
	_, ans = a.rpc(a.admin, "slow", call("SendMessage", map[string]any{"message": userMessage("talk", ""), "configuration": map[string]any{"returnImmediately": true}}))
	runID, _ := path(ans.Result, "task", "id").(string)
	if path(ans.Result, "task", "status", "state") != "TASK_STATE_WORKING" || runID == "" {
		t.Fatalf("SendMessage on A = %+v", ans)
	}
	waitStarted(t, slow)
	_, ans = b.rpc(b.admin, "slow", call("GetTask", map[string]any{"id": runID}))
	if path(ans.Result, "status", "state") != "TASK_STATE_WORKING" {
		t.Fatalf("GetTask on B of a running task = %+v", ans)
	}
	_, ans = b.rpc(b.admin, "slow", call("CancelTask", map[string]any{"id": runID}))
	if ans.Error != nil || ans.Result["id"] != runID || path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask on B = %+v", ans)
	}
	waitFor(t, "A's cancelled turn to end", func() bool { return a.srv.turns.active() == 0 })
	for name, e := range map[string]*testEnv{"A": a, "B": b} {
		// A ends it canceled, with what the model said, and stores that.
		waitFor(t, "the task to be canceled on "+name, func() bool {
			_, ans = e.rpc(e.admin, "slow", call("GetTask", map[string]any{"id": runID}))
			return path(ans.Result, "status", "state") == "TASK_STATE_CANCELED" && path(ans.Result, "status", "message") != nil
		})
		if !strings.HasPrefix(answerText(ans.Result), "word ") {
			t.Errorf("task on %s = %+v, want the partial answer", name, ans.Result)
		}
		_, ans = e.rpc(e.admin, "slow", call("CancelTask", map[string]any{"id": runID}))
		wantTaskError(t, "second CancelTask on "+name, ans, a2a.CodeTaskNotCancelable)
	}
}

// Tasks are in the metadata store: a restarted server (SQLite) answers
// tasks/get of a task the previous one ran, reports a task its owner
// left unfinished as failed once stale, and cancels a stored running task.
func TestA2ATasksSurviveRestart(t *testing.T) {
	e := newEnv(t, nil)
	ag := e.createAgent(e.admin, map[string]any{"name": "echo"})
	e.createAgent(e.admin, map[string]any{"name": "other"})
	_, ans := e.rpc(e.admin, "echo", call("SendMessage", map[string]any{"message": userMessage("keep me", "")}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	ctxID, _ := path(ans.Result, "task", "contextId").(string)
	if path(ans.Result, "task", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("SendMessage = %+v", ans)
	}
	r := restarted(t, e)
	_, ans = r.rpc(r.admin, "echo", call("tasks/get", map[string]any{"id": taskID, "historyLength": 1}))
	hist, _ := ans.Result["history"].([]any)
	if ans.Error != nil || path(ans.Result, "status", "state") != "completed" || ans.Result["contextId"] != ctxID || answerText(ans.Result) != "keep me" ||
		len(hist) != 1 || path(hist[0], "role") != "agent" {
		t.Fatalf("tasks/get after restart = %+v", ans)
	}
	_, ans = r.rpc(r.admin, "other", call("GetTask", map[string]any{"id": taskID}))
	wantTaskError(t, "GetTask at another agent after restart", ans, a2a.CodeTaskNotFound)

	// Tasks a dead server left working: past its stale time one reads as
	// failed (and cannot be cancelled); before it, it is cancelled in the
	// store.
	store := e.srv.meta.(*meta.SQL)
	now := time.Now().UTC()
	put := func(id string, staleAt time.Time) {
		t.Helper()
		data, _ := json.Marshal(a2a.Task{ID: id, ContextID: ctxID, Status: a2a.Status{State: a2a.StateWorking}, History: []a2a.Message{{MessageID: "u", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}})
		err := store.PutA2ATask(context.Background(), meta.A2ATask{TenantID: e.tenant(), ID: id, AgentID: ag.ID, ContextID: ctxID, State: "working",
			Owner: "weft_gone", Data: data, CreatedAt: now.Add(-time.Hour), UpdatedAt: staleAt.Add(-time.Minute), StaleAt: staleAt})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("msg_stale", now.Add(-time.Second))
	_, ans = r.rpc(r.admin, "echo", call("GetTask", map[string]any{"id": "msg_stale"}))
	msg, _ := path(ans.Result, "status", "message", "parts").([]any)
	if path(ans.Result, "status", "state") != "TASK_STATE_FAILED" || len(msg) != 1 || !strings.Contains(path(msg[0], "text").(string), "the task was lost") {
		t.Fatalf("GetTask of a stale task = %+v", ans)
	}
	_, ans = r.rpc(r.admin, "echo", call("CancelTask", map[string]any{"id": "msg_stale"}))
	wantTaskError(t, "CancelTask of a stale task", ans, a2a.CodeTaskNotCancelable)

	put("msg_running", now.Add(time.Hour))
	_, ans = r.rpc(r.admin, "echo", call("GetTask", map[string]any{"id": "msg_running"}))
	if path(ans.Result, "status", "state") != "TASK_STATE_WORKING" {
		t.Fatalf("GetTask of a stored running task = %+v", ans)
	}
	_, ans = r.rpc(r.admin, "echo", call("CancelTask", map[string]any{"id": "msg_running", "historyLength": 0}))
	if ans.Error != nil || path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" || ans.Result["history"] != nil {
		t.Fatalf("CancelTask of a stored running task = %+v", ans)
	}
	_, ans = e.rpc(e.admin, "echo", call("GetTask", map[string]any{"id": "msg_running"}))
	if path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("GetTask on the first server after the cancel = %+v", ans)
	}
}

// listTasks calls ListTasks and returns the page's task ids.
func listTasks(t *testing.T, e *testEnv, key, agent string, params map[string]any) ([]string, rpcAnswer) {
	t.Helper()
	_, ans := e.rpc(key, agent, call("ListTasks", params))
	if ans.Error != nil {
		return nil, ans
	}
	tasks, ok := ans.Result["tasks"].([]any)
	if !ok {
		t.Fatalf("ListTasks %v = %+v", params, ans)
	}
	var ids []string
	for _, task := range tasks {
		ids = append(ids, path(task, "id").(string))
	}
	return ids, ans
}

// TestA2AListTasks: ListTasks lists the agent's tasks, newest first, in
// pages; filters by context, state (a lost task is failed) and time of
// the last change; cuts histories, leaves artifacts out unless asked;
// shows no other agent's or tenant's task; refuses bad params.
func TestA2AListTasks(t *testing.T) {
	e := newEnv(t, nil)
	ag := e.createAgent(e.admin, map[string]any{"name": "echo"})
	e.createAgent(e.admin, map[string]any{"name": "other"})
	send := func(agent, text, ctxID string) map[string]any {
		t.Helper()
		_, ans := e.rpc(e.admin, agent, call("SendMessage", map[string]any{"message": userMessage(text, ctxID)}))
		task, _ := ans.Result["task"].(map[string]any)
		if task == nil {
			t.Fatalf("SendMessage = %+v", ans)
		}
		return task
	}
	t1 := send("echo", "one", "")
	ctxA := t1["contextId"].(string)
	t2 := send("echo", "two", ctxA)
	t3 := send("echo", "three", "")
	send("other", "elsewhere", "")
	id := func(task map[string]any) string { return task["id"].(string) }

	ids, ans := listTasks(t, e, e.admin, "echo", map[string]any{})
	if strings.Join(ids, ",") != strings.Join([]string{id(t3), id(t2), id(t1)}, ",") ||
		ans.Result["nextPageToken"] != "" || ans.Result["pageSize"] != 50.0 || ans.Result["totalSize"] != 3.0 {
		t.Fatalf("ListTasks = %+v", ans)
	}
	first := ans.Result["tasks"].([]any)[0].(map[string]any)
	hist, _ := first["history"].([]any)
	if _, ok := first["artifacts"]; ok || len(hist) != 2 || path(first, "status", "state") != "TASK_STATE_COMPLETED" || first["contextId"] != t3["contextId"] {
		t.Fatalf("listed task = %v", first)
	}
	ids, _ = listTasks(t, e, e.admin, "echo", map[string]any{"contextId": ctxA})
	if strings.Join(ids, ",") != id(t2)+","+id(t1) {
		t.Fatalf("by context: %v", ids)
	}
	// Pages of two.
	ids, ans = listTasks(t, e, e.admin, "echo", map[string]any{"pageSize": 2})
	next, _ := ans.Result["nextPageToken"].(string)
	if strings.Join(ids, ",") != id(t3)+","+id(t2) || next == "" || ans.Result["totalSize"] != 3.0 || ans.Result["pageSize"] != 2.0 {
		t.Fatalf("page 1 = %+v", ans)
	}
	ids, ans = listTasks(t, e, e.admin, "echo", map[string]any{"pageSize": 2, "pageToken": next})
	if strings.Join(ids, ",") != id(t1) || ans.Result["nextPageToken"] != "" {
		t.Fatalf("page 2 = %+v", ans)
	}
	// Artifacts when asked; history cut.
	_, ans = listTasks(t, e, e.admin, "echo", map[string]any{"includeArtifacts": true, "historyLength": 0, "pageSize": 1})
	first = ans.Result["tasks"].([]any)[0].(map[string]any)
	if answerText(first) != "three" || first["history"] != nil {
		t.Fatalf("with artifacts, no history = %v", first)
	}
	// Changed at or after t2's status time.
	ids, _ = listTasks(t, e, e.admin, "echo", map[string]any{"statusTimestampAfter": path(t2, "status", "timestamp")})
	if strings.Join(ids, ",") != id(t3)+","+id(t2) {
		t.Fatalf("since t2: %v", ids)
	}
	// By state, by name or number; a task its server left working is
	// failed once stale.
	store := e.srv.meta.(*meta.SQL)
	now := time.Now().UTC()
	data, _ := json.Marshal(a2a.Task{ID: "msg_lost", ContextID: ctxA, Status: a2a.Status{State: a2a.StateWorking}})
	if err := store.PutA2ATask(context.Background(), meta.A2ATask{TenantID: e.tenant(), ID: "msg_lost", AgentID: ag.ID, ContextID: ctxA, State: "working",
		Owner: "weft_gone", Data: data, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour), StaleAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for status, want := range map[any]string{
		"TASK_STATE_COMPLETED": id(t3) + "," + id(t2) + "," + id(t1), 3.0: id(t3) + "," + id(t2) + "," + id(t1),
		"TASK_STATE_FAILED": "msg_lost", "TASK_STATE_WORKING": "", "TASK_STATE_UNSPECIFIED": id(t3) + "," + id(t2) + "," + id(t1) + ",msg_lost",
	} {
		ids, ans := listTasks(t, e, e.admin, "echo", map[string]any{"status": status})
		if strings.Join(ids, ",") != want {
			t.Errorf("status %v: %v (%+v)", status, ids, ans)
		}
	}
	_, ans = listTasks(t, e, e.admin, "echo", map[string]any{"status": "TASK_STATE_FAILED"})
	if path(ans.Result["tasks"].([]any)[0], "status", "state") != "TASK_STATE_FAILED" {
		t.Fatalf("lost task = %+v", ans)
	}
	// Nothing of another tenant.
	other := e.tenantKey("other")
	e.createAgent(other, map[string]any{"name": "echo"})
	if ids, ans := listTasks(t, e, other, "echo", map[string]any{}); len(ids) != 0 || ans.Result["totalSize"] != 0.0 {
		t.Fatalf("another tenant's list = %+v", ans)
	}
	for _, params := range []map[string]any{
		{"pageSize": 0}, {"pageSize": 101}, {"pageSize": 1.5}, {"status": "TASK_STATE_RUNNING"}, {"status": 9}, {"status": "working"},
		{"pageToken": "not-a-token"}, {"statusTimestampAfter": "yesterday"}, {"historyLength": -1},
	} {
		_, ans := listTasks(t, e, e.admin, "echo", params)
		wantTaskError(t, fmt.Sprintf("ListTasks %v", params), ans, a2a.CodeInvalidParams)
	}
}
