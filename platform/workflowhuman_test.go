package platform

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// waitingRun is a run's answer with its open interrupts.
type waitingRun struct {
	runAnswer
	Interrupts []api.Interrupt `json:"interrupts"`
}

// prepCounter is an HTTP endpoint counting its calls: the work a run
// does before its pause, which must not repeat.
func prepCounter(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "prepared")
	}))
	t.Cleanup(hs.Close)
	return hs.URL, &n
}

var yesNo = map[string]any{"type": "object", "required": []string{"ok"},
	"properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "note": map[string]any{"type": "string"}}}

// reviewWorkflow asks approve after an http node (prep).
func reviewWorkflow(prep string) map[string]any {
	return map[string]any{"name": "review", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"amount": map[string]any{"type": "number"}}},
		map[string]any{"id": "prep", "kind": "http", "url": prep, "depends_on": []string{"start"}},
		map[string]any{"id": "approve", "kind": "human", "message": "Approve {{ inputs.amount }} EUR?", "output_schema": yesNo, "depends_on": []string{"prep"}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"ok": "{{ nodes.approve.outputs.ok }}", "prep": "{{ nodes.prep.outputs.body }}"}},
	}}
}

// parallelWorkflow asks a and b at once after prep; join waits for both.
func parallelWorkflow(prep string) map[string]any {
	ask := func(id string) map[string]any {
		return map[string]any{"id": id, "kind": "human", "message": "Sign " + id + "?", "output_schema": yesNo, "depends_on": []string{"prep"}}
	}
	return map[string]any{"name": "both", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "prep", "kind": "http", "url": prep, "depends_on": []string{"start"}},
		ask("a"), ask("b"),
		map[string]any{"id": "join", "kind": "template", "template": "{{ nodes.a.outputs.ok }}/{{ nodes.b.outputs.ok }}", "depends_on": []string{"a", "b"}},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"both": "{{ nodes.join.outputs.text }}"}},
	}}
}

func resumePath(in api.Interrupt) string { return in.Resume }

// resume answers in and returns the response (the run, or an error).
func (e *testEnv) resume(key string, in api.Interrupt, answer map[string]any, out any) *http.Response {
	e.t.Helper()
	return e.do(key, "POST", resumePath(in), map[string]any{"answer": answer}, out)
}

// TestWorkflowHumanRun: a run that reaches a human node waits (status
// waiting, its interrupt listed on the run and in the tenant's inbox, no
// goroutine or lease held); a bad answer is a 400 naming the field and
// leaves it waiting; an unknown id is a 404, another tenant's a 404; the
// answer resumes it without repeating what ran before the pause; a second
// answer is a 409 carrying the first.
func TestWorkflowHumanRun(t *testing.T) {
	prep, calls := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	wfID := e.saveWorkflow(reviewWorkflow(prep))
	var run waitingRun
	if resp := e.do(e.admin, "POST", "/v1/workflows/review/runs", map[string]any{"inputs": map[string]any{"amount": 120}}, &run); resp.StatusCode != http.StatusOK {
		t.Fatalf("run: %d %s", resp.StatusCode, body(resp))
	}
	if run.Status != meta.RunWaiting || len(run.Outputs) != 0 || len(run.Interrupts) != 1 {
		t.Fatalf("run %+v", run)
	}
	in := run.Interrupts[0]
	if in.ID != run.ID+":approve" || in.Kind != "workflow" || in.NodeID != "approve" || in.Message != "Approve 120 EUR?" ||
		!strings.Contains(string(in.OutputSchema), `"required":["ok"]`) || in.ExpiresAt != nil ||
		in.Resume != "/v1/workflows/"+wfID+"/runs/"+run.ID+"/interrupts/"+url.PathEscape(in.ID)+"/resume" {
		t.Fatalf("interrupt %+v", in)
	}
	// At rest: no lease, no live run, no goroutine of the run.
	stored, err := e.srv.workflows.store.WorkflowRun(context.Background(), e.tenant(), run.ID)
	if err != nil || stored.Status != meta.RunWaiting || stored.Owner != "" || !stored.LeaseUntil.Equal(time.UnixMicro(0).UTC()) && !stored.LeaseUntil.IsZero() {
		t.Fatalf("stored %+v %v", stored, err)
	}
	e.srv.workflows.mu.Lock()
	live := len(e.srv.workflows.live)
	e.srv.workflows.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d live runs while the run waits", live)
	}

	var runs []runAnswer
	e.do(e.admin, "GET", "/v1/workflows/review/runs", nil, &runs)
	if len(runs) != 1 || runs[0].Status != meta.RunWaiting {
		t.Fatalf("runs %+v", runs)
	}
	var list api.InterruptList
	e.do(e.admin, "GET", "/v1/workflows/review/runs/"+run.ID+"/interrupts", nil, &list)
	if len(list.Data) != 1 || list.Data[0].ID != in.ID {
		t.Fatalf("run interrupts %+v", list)
	}
	list = api.InterruptList{}
	e.do(e.admin, "GET", "/v1/interrupts?kind=workflow", nil, &list)
	if len(list.Data) != 1 || list.Data[0].ID != in.ID || list.Data[0].WorkflowID != wfID || list.Data[0].Message != in.Message {
		t.Fatalf("inbox %+v", list)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/interrupts?kind=nope", nil, nil), http.StatusBadRequest, CodeInvalidRequest)

	// Another tenant sees nothing and answers nothing.
	other := e.tenantKey("other")
	list = api.InterruptList{}
	e.do(other, "GET", "/v1/interrupts", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("another tenant's inbox %+v", list)
	}
	e.wantError(e.do(other, "GET", "/v1/workflows/"+wfID+"/runs/"+run.ID+"/interrupts", nil, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.resume(other, in, map[string]any{"ok": true}, nil), http.StatusNotFound, CodeNotFound)

	// Bad answers: 400 naming the field; unknown ids: 404. Still waiting.
	var eb struct{ Error api.ErrorDetail }
	resp := e.resume(e.admin, in, map[string]any{"ok": "yes"}, &eb)
	if resp.StatusCode != http.StatusBadRequest || eb.Error.Param != "answer.ok" || !strings.Contains(eb.Error.Message, "answer.ok") {
		t.Fatalf("bad answer: %d %+v", resp.StatusCode, eb)
	}
	resp = e.resume(e.admin, in, map[string]any{"note": "no ok"}, &eb)
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(eb.Error.Param, "answer") {
		t.Fatalf("missing field: %d %+v", resp.StatusCode, eb)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/workflows/"+wfID+"/runs/"+run.ID+"/interrupts/"+url.PathEscape(run.ID+":nope")+"/resume", map[string]any{"answer": map[string]any{}}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(e.admin, "POST", "/v1/workflows/"+wfID+"/runs/"+run.ID+"/interrupts/run_x:approve/resume", map[string]any{"answer": map[string]any{}}, nil), http.StatusNotFound, CodeNotFound)
	var still waitingRun
	e.do(e.admin, "GET", "/v1/workflows/review/runs/"+run.ID, nil, &still)
	if still.Status != meta.RunWaiting || len(still.Interrupts) != 1 {
		t.Fatalf("after bad answers: %+v", still)
	}

	var done waitingRun
	if resp := e.resume(e.admin, in, map[string]any{"ok": true, "note": "fine"}, &done); resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d %s", resp.StatusCode, body(resp))
	}
	if done.Status != meta.RunSucceeded || done.Outputs["ok"] != true || done.Outputs["prep"] != "prepared" || len(done.Interrupts) != 0 {
		t.Fatalf("resumed run %+v", done)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("prep ran %d times, want 1", n)
	}
	// The history records the answer and who gave it.
	var answered bool
	for _, n := range done.Nodes {
		if n.Key == "approve#answer:" {
			answered = n.Outputs["ok"] == true && n.Inputs["resumed_by"] == "admin" && n.Inputs["waited_ms"] != nil
		}
	}
	if !answered {
		t.Fatalf("the run's history lacks the answer and who gave it: %+v", done.Nodes)
	}
	resp = e.resume(e.admin, in, map[string]any{"ok": false}, &eb)
	if resp.StatusCode != http.StatusConflict || eb.Error.Code != CodeConflict || string(eb.Error.Answer) != `{"note":"fine","ok":true}` {
		t.Fatalf("second answer: %d %+v", resp.StatusCode, eb)
	}
	list = api.InterruptList{}
	e.do(e.admin, "GET", "/v1/interrupts", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("inbox after the answer %+v", list)
	}
}

// TestWorkflowHumanStream: a streamed run ends with workflow.waiting
// carrying its interrupts; a streamed answer starts with
// workflow.resumed naming the key that answered and ends with
// workflow.finished.
func TestWorkflowHumanStream(t *testing.T) {
	prep, calls := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(reviewWorkflow(prep))
	frames := e.stream("/v1/workflows/review/runs", `{"inputs":{"amount":5},"stream":true}`)
	last := frames[len(frames)-1]
	ins, _ := last.Data["interrupts"].([]any)
	if last.Event != "workflow.waiting" || last.Data["status"] != "waiting" || len(ins) != 1 {
		t.Fatalf("last event %+v", last)
	}
	var sawNode bool
	for _, f := range frames {
		sawNode = sawNode || f.Event == "node.waiting" && f.Data["node_id"] == "approve"
	}
	if !sawNode {
		t.Fatalf("no node.waiting in %+v", frames)
	}
	route := ins[0].(map[string]any)["resume"].(string)
	frames = e.stream(route, `{"answer":{"ok":false},"stream":true}`)
	first, last := frames[0], frames[len(frames)-1]
	if first.Event != "workflow.resumed" || first.Data["resumed_by"] != "admin" || first.Data["node_id"] != "approve" || first.Data["waited_ms"] == nil {
		t.Fatalf("first event %+v", first)
	}
	if last.Event != "workflow.finished" || last.Data["outputs"].(map[string]any)["ok"] != false {
		t.Fatalf("last event %+v", last)
	}
	for _, f := range frames {
		if f.Event == "node.finished" && f.Data["node_id"] == "prep" && f.Data["restored"] != true {
			t.Fatalf("prep ran again: %+v", f)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("prep ran %d times", calls.Load())
	}
}

// stream posts raw to path with the admin key and reads the SSE answer.
func (e *testEnv) stream(path, raw string) []sseFrame {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+path, strings.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body(resp))
	}
	frames, _ := readSSE(e.t.(*testing.T), resp.Body)
	if len(frames) == 0 {
		e.t.Fatalf("POST %s: no events", path)
	}
	return frames
}

// TestWorkflowHumanParallel: two pauses on parallel branches are answered
// one by one; the join waits for both; nothing before them runs again.
func TestWorkflowHumanParallel(t *testing.T) {
	prep, calls := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(parallelWorkflow(prep))
	var run waitingRun
	e.do(e.admin, "POST", "/v1/workflows/both/runs", map[string]any{}, &run)
	if run.Status != meta.RunWaiting || len(run.Interrupts) != 2 {
		t.Fatalf("run %+v", run)
	}
	byNode := map[string]api.Interrupt{}
	for _, in := range run.Interrupts {
		byNode[in.NodeID] = in
	}
	var mid waitingRun
	if resp := e.resume(e.admin, byNode["b"], map[string]any{"ok": false}, &mid); resp.StatusCode != http.StatusOK {
		t.Fatalf("answer b: %d %s", resp.StatusCode, body(resp))
	}
	if mid.Status != meta.RunWaiting || len(mid.Interrupts) != 1 || mid.Interrupts[0].NodeID != "a" {
		t.Fatalf("after b: %+v", mid)
	}
	for _, n := range mid.Nodes {
		if n.NodeID == "join" {
			t.Fatalf("join ran before a was answered: %+v", n)
		}
	}
	var done waitingRun
	e.resume(e.admin, byNode["a"], map[string]any{"ok": true}, &done)
	if done.Status != meta.RunSucceeded || done.Outputs["both"] != "true/false" {
		t.Fatalf("after a: %+v", done)
	}
	if calls.Load() != 1 {
		t.Fatalf("prep ran %d times", calls.Load())
	}
}

// TestWorkflowHumanConcurrentResumes: of concurrent answers to one
// interrupt exactly one resumes the run; the others are 409s carrying
// the winner's answer. Answers to the two questions of a run sent at
// once both land (the second waits for the run to wait again).
func TestWorkflowHumanConcurrentResumes(t *testing.T) {
	prep, calls := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(reviewWorkflow(prep))
	e.saveWorkflow(parallelWorkflow(prep))
	var run waitingRun
	e.do(e.admin, "POST", "/v1/workflows/review/runs", map[string]any{"inputs": map[string]any{"amount": 1}}, &run)
	const n = 6
	var wg sync.WaitGroup
	var ok, conflict atomic.Int32
	answers := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var eb struct{ Error api.ErrorDetail }
			resp := e.resume(e.admin, run.Interrupts[0], map[string]any{"ok": i%2 == 0, "note": string(rune('a' + i))}, &eb)
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
				answers[i] = "won"
			case http.StatusConflict:
				conflict.Add(1)
				answers[i] = string(eb.Error.Answer)
			default:
				t.Errorf("resume %d: %d %s", i, resp.StatusCode, body(resp))
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != n-1 {
		t.Fatalf("%d won, %d conflicts (%v)", ok.Load(), conflict.Load(), answers)
	}
	var winner string
	for i, a := range answers {
		if a == "won" {
			winner = string(rune('a' + i))
		}
	}
	for _, a := range answers {
		if a != "won" && !strings.Contains(a, `"note":"`+winner+`"`) {
			t.Fatalf("a loser saw %s, the winner answered %s", a, winner)
		}
	}

	// Both questions of a run answered at once.
	var both waitingRun
	e.do(e.admin, "POST", "/v1/workflows/both/runs", map[string]any{}, &both)
	codes := make([]int, 2)
	for i, in := range both.Interrupts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = e.resume(e.admin, in, map[string]any{"ok": true}, nil).StatusCode
		}()
	}
	wg.Wait()
	var got waitingRun
	e.do(e.admin, "GET", "/v1/workflows/both/runs/"+both.ID, nil, &got)
	if codes[0] != 200 || codes[1] != 200 || got.Status != meta.RunSucceeded || got.Outputs["both"] != "true/true" {
		t.Fatalf("codes %v, run %+v", codes, got)
	}
	if calls.Load() != 2 {
		t.Fatalf("prep ran %d times for 2 runs", calls.Load())
	}
}

// lateWorkflow asks with a timeout of a second and an escalate branch.
func lateWorkflow() map[string]any {
	return map[string]any{"name": "late", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "ask", "kind": "human", "message": "Refund?", "timeout": "1s", "on_timeout": []string{"escalate"}, "output_schema": yesNo, "depends_on": []string{"start"}},
		map[string]any{"id": "refund", "kind": "template", "template": "refund {{ nodes.ask.outputs.ok }}"},
		map[string]any{"id": "escalate", "kind": "template", "template": "escalated {{ nodes.ask.outputs.timed_out }}"},
		map[string]any{"id": "end", "kind": "end", "depends_on": []string{"refund", "escalate"}, "outputs": map[string]any{"r": "{{ nodes.refund.outputs.text }}", "e": "{{ nodes.escalate.outputs.text }}"}},
	}}
}

// TestWorkflowHumanTimeout: a question with a timeout wakes its run once
// the deadline passed (no goroutine waited for it): the run takes the
// timeout branch, and a late answer is a 409; an answer after the
// deadline to a run nobody woke yet is a 409 that sends it down the
// timeout branch.
func TestWorkflowHumanTimeout(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.WorkflowLease = 200 * time.Millisecond })
	e.saveWorkflow(lateWorkflow())
	var run waitingRun
	e.do(e.admin, "POST", "/v1/workflows/late/runs", map[string]any{}, &run)
	if run.Status != meta.RunWaiting || len(run.Interrupts) != 1 || run.Interrupts[0].ExpiresAt == nil {
		t.Fatalf("run %+v", run)
	}
	var got waitingRun
	for deadline := time.Now().Add(20 * time.Second); ; {
		e.do(e.admin, "GET", "/v1/workflows/late/runs/"+run.ID, nil, &got)
		if got.Status == meta.RunSucceeded || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Status != meta.RunSucceeded || got.Outputs["e"] != "escalated true" || got.Outputs["r"] != nil {
		t.Fatalf("run after the deadline %+v", got)
	}
	e.wantError(e.resume(e.admin, run.Interrupts[0], map[string]any{"ok": true}, nil), http.StatusConflict, CodeConflict)

	// An answer that comes after the deadline, before any replica woke the
	// run (their loop waits half a minute here), is a 409, and the run
	// takes the timeout branch then.
	slow := newEnv(t, nil, func(c *Config) { c.WorkflowLease = time.Minute })
	slow.saveWorkflow(lateWorkflow())
	run = waitingRun{}
	slow.do(slow.admin, "POST", "/v1/workflows/late/runs", map[string]any{}, &run)
	time.Sleep(time.Until(*run.Interrupts[0].ExpiresAt) + 100*time.Millisecond)
	eb := slow.wantError(slow.resume(slow.admin, run.Interrupts[0], map[string]any{"ok": true}, nil), http.StatusConflict, CodeConflict)
	if !strings.Contains(eb.Error.Message, "expired") {
		t.Fatalf("a late answer: %+v", eb)
	}
	got = waitingRun{}
	for deadline := time.Now().Add(20 * time.Second); ; {
		slow.do(slow.admin, "GET", "/v1/workflows/late/runs/"+run.ID, nil, &got)
		if got.Status == meta.RunSucceeded || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Status != meta.RunSucceeded || got.Outputs["e"] != "escalated true" || got.Outputs["r"] != nil {
		t.Fatalf("run after a late answer %+v", got)
	}
}

// TestWorkflowHumanReplicas: on PostgreSQL and Redis, a run pauses on
// replica a; a is restarted (its context ended, a new server on the same
// stores); the two questions are answered on b and on the restarted a,
// and duplicate answers across replicas resume once; nothing before the
// pause runs again.
func TestWorkflowHumanReplicas(t *testing.T) {
	url := os.Getenv("WEFT_TEST_REDIS_URL")
	if url == "" || os.Getenv("WEFT_TEST_POSTGRES_URL") == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL and WEFT_TEST_REDIS_URL not set")
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	prep, calls := prepCounter(t)
	ctx := context.Background()
	store := openTestPostgres(t)
	admin, err := Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	replica := func(instance string) (*testEnv, func()) {
		rdb := redis.NewClient(ro)
		cfg := Config{Meta: store, Sessions: memory.NewInMemory(), Redis: rdb, RateLimit: -1, Instance: instance,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OpenModel: func(spec string) (*llm.Model, error) {
				return llm.New(scripted.New(scripted.Echo()), llm.WithName(spec)), nil
			}}
		allowLoopback(&cfg)
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		stop := func() { hs.CloseClientConnections(); hs.Close(); srv.Close(); rdb.Close() }
		return &testEnv{t: t, srv: srv, http: hs, admin: admin}, stop
	}
	a, stopA := replica("replica-a")
	b, stopB := replica("replica-b")
	defer stopB()
	a.saveWorkflow(parallelWorkflow(prep))
	var run waitingRun
	a.do(admin, "POST", "/v1/workflows/both/runs", map[string]any{}, &run)
	if run.Status != meta.RunWaiting || len(run.Interrupts) != 2 {
		t.Fatalf("run %+v", run)
	}
	stopA() // the restart: nothing of the run lived in a
	a2, stopA2 := replica("replica-a")
	defer stopA2()

	// Duplicate answers to one question on both replicas: one wins.
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		env := a2
		if i%2 == 1 {
			env = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = env.resume(admin, run.Interrupts[0], map[string]any{"ok": true}, nil).StatusCode
		}()
	}
	wg.Wait()
	var won int
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			won++
		case http.StatusConflict:
		default:
			t.Fatalf("codes %v", codes)
		}
	}
	if won != 1 {
		t.Fatalf("%d answers won (codes %v)", won, codes)
	}
	var mid waitingRun
	b.do(admin, "GET", "/v1/workflows/both/runs/"+run.ID, nil, &mid)
	if mid.Status != meta.RunWaiting || len(mid.Interrupts) != 1 || mid.Interrupts[0].ID != run.Interrupts[1].ID {
		t.Fatalf("after the first answer %+v", mid)
	}
	var done waitingRun
	if resp := b.resume(admin, run.Interrupts[1], map[string]any{"ok": false}, &done); resp.StatusCode != http.StatusOK {
		t.Fatalf("second answer: %d %s", resp.StatusCode, body(resp))
	}
	if done.Status != meta.RunSucceeded || done.Outputs["both"] == nil || calls.Load() != 1 {
		t.Fatalf("run %+v, prep ran %d times", done, calls.Load())
	}
	var got waitingRun
	a2.do(admin, "GET", "/v1/workflows/both/runs/"+run.ID, nil, &got)
	if got.Status != meta.RunSucceeded {
		t.Fatalf("replica a sees %+v", got)
	}
}

// TestWorkflowHumanCancel: a waiting run is cancelled at once; its
// questions leave the inbox and answers are refused.
func TestWorkflowHumanCancel(t *testing.T) {
	prep, _ := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(reviewWorkflow(prep))
	run := waitingRun{}
	e.do(e.admin, "POST", "/v1/workflows/review/runs", map[string]any{"inputs": map[string]any{"amount": 1}}, &run)
	var got runAnswer
	if resp := e.do(e.admin, "POST", "/v1/workflows/review/runs/"+run.ID+"/cancel", nil, &got); resp.StatusCode != http.StatusAccepted || got.Status != meta.RunCancelled {
		t.Fatalf("cancel: %d %+v", resp.StatusCode, got)
	}
	var list api.InterruptList
	e.do(e.admin, "GET", "/v1/interrupts", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("inbox %+v", list)
	}
	e.wantError(e.resume(e.admin, run.Interrupts[0], map[string]any{"ok": true}, nil), http.StatusConflict, CodeConflict)
}

// TestWorkflowHumanSurfaces: a run that waits is no empty success on the
// other surfaces — the OpenAI model's answer (blocking and streamed), the
// MCP tool's result and an agent's workflow tool say it waits, for what,
// and the route that answers it; that route resumes the run.
func TestWorkflowHumanSurfaces(t *testing.T) {
	prep, _ := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	wfID := e.saveWorkflow(reviewWorkflow(prep))
	mentions := func(where, text string) string {
		t.Helper()
		runs := e.workflowRuns("review")
		route := "/v1/workflows/" + wfID + "/runs/" + runs[0].ID + "/interrupts/" + url.PathEscape(runs[0].ID+":approve") + "/resume"
		if runs[0].Status != meta.RunWaiting || !strings.Contains(text, "waiting") || !strings.Contains(text, "Approve 7 EUR?") || !strings.Contains(text, route) {
			t.Fatalf("%s: %q does not name the waiting run's question and %s (run %+v)", where, text, route, runs[0])
		}
		return route
	}

	var cc api.ChatCompletion
	resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:review",
		"messages": []any{map[string]any{"role": "user", "content": `{"amount": 7}`}}}, &cc)
	if resp.StatusCode != http.StatusOK || len(cc.Choices) != 1 || cc.Choices[0].Message.Content == nil || cc.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion: %d %s", resp.StatusCode, body(resp))
	}
	route := mentions("OpenAI answer", *cc.Choices[0].Message.Content)
	var done waitingRun
	if resp := e.do(e.admin, "POST", route, map[string]any{"answer": map[string]any{"ok": true}}, &done); resp.StatusCode != http.StatusOK || done.Status != meta.RunSucceeded {
		t.Fatalf("resume through the route named: %d %s", resp.StatusCode, body(resp))
	}

	sresp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "workflow:review", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": `{"amount": 7}`}}}, nil)
	raw := body(sresp)
	if !strings.HasSuffix(raw, "data: [DONE]\n\n") {
		t.Fatalf("stream %s", raw)
	}
	var text strings.Builder
	for _, line := range strings.Split(raw, "\n") {
		var ch api.ChatCompletionChunk
		if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &ch) == nil && len(ch.Choices) == 1 && ch.Choices[0].Delta.Content != nil {
			text.WriteString(*ch.Choices[0].Delta.Content)
		}
	}
	mentions("OpenAI stream", text.String())

	c := e.mcpClient(e.admin)
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "workflow_review", Arguments: map[string]any{"amount": 7},
		Meta: mcp.Meta{"progressToken": "tok-wait"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("MCP: an error result for a waiting run: %s", textOf(res))
	}
	mentions("MCP result", textOf(res))
	if sc, _ := res.StructuredContent.(map[string]any); sc["status"] != "waiting" {
		t.Fatalf("MCP structured content %+v", res.StructuredContent)
	}
	// Progress says which node waits (the client may hand notifications
	// to its handler after CallTool returns).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		got := slices.Clone(c.progress)
		c.mu.Unlock()
		if slices.Contains(got, "node approve waits for a person's answer") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress messages %q name no waiting node", got)
		}
	}

	id, _, _ := parseKey(e.admin)
	key, err := e.srv.meta.KeyByID(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(t.Context(), principalKey{}, principal{Key: key, Tenant: key.TenantID})
	out, err := (&workflowTool{s: e.srv, tenant: key.TenantID, workflowID: wfID}).Call(ctx, json.RawMessage(`{"amount": 7}`))
	if err != nil {
		t.Fatalf("agent tool: %v", err)
	}
	mentions("agent tool result", out.Content)
}

// TestWorkflowHumanAtRest: what waiting runs cost. Fifty runs waiting at
// a human node hold no goroutine and no live run on the server, and each
// stores its run row and its checkpoints (the question included); the
// test logs the bytes of their fields.
func TestWorkflowHumanAtRest(t *testing.T) {
	prep, _ := prepCounter(t)
	e := newEnv(t, nil, allowLoopback)
	e.saveWorkflow(reviewWorkflow(prep))
	settle := func() int {
		// Idle HTTP connections and finished goroutines settle.
		http.DefaultClient.CloseIdleConnections()
		n := runtime.NumGoroutine()
		for range 50 {
			time.Sleep(20 * time.Millisecond)
			runtime.GC()
			if m := runtime.NumGoroutine(); m == n {
				break
			} else {
				n = m
			}
		}
		return n
	}
	var first waitingRun
	e.do(e.admin, "POST", "/v1/workflows/review/runs", map[string]any{"inputs": map[string]any{"amount": 1}}, &first) // warm
	before := settle()
	const runs = 50
	ids := make([]string, runs)
	for i := range runs {
		var run waitingRun
		e.do(e.admin, "POST", "/v1/workflows/review/runs", map[string]any{"inputs": map[string]any{"amount": 120}}, &run)
		if run.Status != meta.RunWaiting {
			t.Fatalf("run %+v", run)
		}
		ids[i] = run.ID
	}
	after := settle()
	if after-before > 3 {
		t.Fatalf("%d goroutines before %d waiting runs, %d after", before, runs, after)
	}
	e.srv.workflows.mu.Lock()
	live := len(e.srv.workflows.live)
	e.srv.workflows.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d live runs", live)
	}
	store := e.srv.workflows.store
	run, _ := store.WorkflowRun(t.Context(), e.tenant(), ids[0])
	cps, _ := store.WorkflowCheckpoints(t.Context(), e.tenant(), ids[0])
	rowBytes := len(run.ID) + len(run.WorkflowID) + len(run.KeyID) + len(run.Status) + len(run.Inputs) + len(run.Outputs) + len(run.Error) + len(e.tenant()) + 7*8
	var cpBytes, question int
	for _, cp := range cps {
		cpBytes += len(e.tenant()) + len(run.ID) + len(cp.Key) + len(cp.NodeID) + len(cp.Inputs) + len(cp.Outputs) + len(cp.Usage) + len(cp.Error) + len(cp.Waiting) + 3*8
		question += len(cp.Waiting)
	}
	t.Logf("goroutines: %d before, %d after %d waiting runs; a waiting run stores a run row of %d bytes and %d checkpoints of %d bytes (the question: %d bytes of JSON)",
		before, after, runs, rowBytes, len(cps), cpBytes, question)
}
