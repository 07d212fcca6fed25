package platform

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/a2a"
)

// withGatedModel makes every agent talk through gated.
func withGatedModel(gated *gatedModel) envOption {
	return func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			return llm.New(gated, llm.WithName(spec), llm.WithRetries(0)), nil
		}
	}
}

// a2aStream is an A2A stream read as its events come.
type a2aStream struct {
	t      *testing.T
	resp   *http.Response
	frames chan rpcAnswer
}

// openStream posts a streaming request; the caller reads its events with
// next. A JSON answer (an error before any event) is its one frame.
func (e *testEnv) openStream(agent string, req any) *a2aStream {
	e.t.Helper()
	buf, _ := json.Marshal(req)
	hr, _ := http.NewRequest("POST", e.http.URL+"/a2a/agents/"+agent, bytes.NewReader(buf))
	hr.Header.Set("Authorization", "Bearer "+e.admin)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &a2aStream{t: e.t.(*testing.T), resp: resp, frames: make(chan rpcAnswer, 100)}
	e.t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.frames)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var a rpcAnswer
			json.NewDecoder(resp.Body).Decode(&a)
			s.frames <- a
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var a rpcAnswer
				if err := json.Unmarshal([]byte(d), &a); err != nil {
					a.JSONRPC = "bad frame: " + d
				}
				s.frames <- a
			}
		}
	}()
	return s
}

// next returns the stream's next event; false when it has ended.
func (s *a2aStream) next() (rpcAnswer, bool) {
	s.t.Helper()
	select {
	case a, ok := <-s.frames:
		return a, ok
	case <-time.After(30 * time.Second):
		s.t.Fatal("timed out waiting for an event")
	}
	return rpcAnswer{}, false
}

// rest reads the stream to its end.
func (s *a2aStream) rest() []rpcAnswer {
	s.t.Helper()
	var out []rpcAnswer
	for {
		a, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, a)
	}
}

// followed is what a subscriber made of its stream's events after the
// task: the answer's text, the states it was sent, whether the last text
// said lastChunk, the final state, and a description of every event.
type followed struct {
	text      string
	states    []string
	lastChunk bool
	final     string
	events    []string
}

func follow(t *testing.T, frames []rpcAnswer) followed {
	t.Helper()
	var f followed
	for i, fr := range frames {
		if fr.Error != nil {
			t.Fatalf("frame %d: error %+v", i, fr.Error)
		}
		if u, ok := fr.Result["artifactUpdate"].(map[string]any); ok {
			parts, _ := path(u, "artifact", "parts").([]any)
			text, _ := path(parts[0], "text").(string)
			f.text += text
			f.lastChunk = u["lastChunk"] == true
			f.events = append(f.events, "artifact")
			if u["append"] != true && i > 0 {
				t.Errorf("frame %d: artifact update %v does not append", i, u)
			}
			continue
		}
		if u, ok := fr.Result["statusUpdate"].(map[string]any); ok {
			st, _ := path(u, "status", "state").(string)
			if i == len(frames)-1 {
				f.final = st
			} else {
				f.states = append(f.states, st)
			}
			f.events = append(f.events, st)
			continue
		}
		t.Fatalf("frame %d: %v", i, fr.Result)
	}
	return f
}

// TestA2ASubscribe: SubscribeToTask joins a running task: its stream
// starts with the task as it is (working, the answer so far), then the
// rest of the answer and the final status end it. Two subscribers get the
// same; one that leaves does not stop the task. The 0.3 name,
// tasks/resubscribe, answers in 0.3's form. An ended task is -32004, an
// unknown one or another agent's -32001.
func TestA2ASubscribe(t *testing.T) {
	gated := &gatedModel{first: []string{"Hel", "lo "}, last: "world", release: make(chan struct{})}
	e := newEnv(t, nil, withGatedModel(gated))
	e.createAgent(e.admin, map[string]any{"name": "g"})
	e.createAgent(e.admin, map[string]any{"name": "other"})
	_, ans := e.rpc(e.admin, "g", call("SendMessage", map[string]any{"message": userMessage("greet", ""), "configuration": map[string]any{"returnImmediately": true}}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	if taskID == "" {
		t.Fatalf("SendMessage = %+v", ans)
	}
	waitFor(t, "the first words", func() bool {
		_, ans = e.rpc(e.admin, "g", call("GetTask", map[string]any{"id": taskID}))
		return answerText(ans.Result) == "Hello "
	})

	subs := []*a2aStream{
		e.openStream("g", call("SubscribeToTask", map[string]any{"id": taskID})),
		e.openStream("g", call("tasks/resubscribe", map[string]any{"id": taskID})),
		e.openStream("g", call("SubscribeToTask", map[string]any{"id": taskID})),
	}
	first, _ := subs[0].next()
	task, _ := first.Result["task"].(map[string]any)
	if path(task, "id") != taskID || path(task, "status", "state") != "TASK_STATE_WORKING" || answerText(task) != "Hello " || string(first.ID) != "7" {
		t.Fatalf("first event = %+v", first)
	}
	legacy, _ := subs[1].next()
	if legacy.Result["kind"] != "task" || path(legacy.Result, "status", "state") != "working" || answerText(legacy.Result) != "Hello " {
		t.Fatalf("0.3 first event = %+v", legacy)
	}
	// The third subscriber leaves; the task goes on.
	if _, ok := subs[2].next(); !ok {
		t.Fatal("third subscription ended")
	}
	subs[2].resp.Body.Close()
	close(gated.release)

	got := follow(t, subs[0].rest())
	if got.text != "world" || !got.lastChunk || got.final != "TASK_STATE_COMPLETED" || len(got.states) != 0 {
		t.Fatalf("after the task: %+v", got)
	}
	// In 0.3's form: artifact updates (how many depends on when the
	// subscriber woke), then the final status.
	frames := subs[1].rest()
	var text strings.Builder
	for _, f := range frames[:len(frames)-1] {
		parts, _ := path(f.Result, "artifact", "parts").([]any)
		if f.Result["kind"] != "artifact-update" || f.Result["append"] != true || len(parts) != 1 {
			t.Fatalf("0.3 event %+v", f)
		}
		text.WriteString(path(parts[0], "text").(string))
	}
	last := frames[len(frames)-1].Result
	if text.String() != "world" || frames[len(frames)-2].Result["lastChunk"] != true ||
		last["kind"] != "status-update" || last["final"] != true || path(last, "status", "state") != "completed" {
		t.Fatalf("0.3 events after the task = %+v", frames)
	}
	_, ans = e.rpc(e.admin, "g", call("GetTask", map[string]any{"id": taskID}))
	if answerText(ans.Result) != "Hello world" || path(ans.Result, "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("GetTask after = %+v", ans)
	}

	// Not a running task of this agent: a JSON answer, no stream.
	for name, c := range map[string]struct {
		agent, id string
		code      int
	}{
		"ended":         {"g", taskID, a2a.CodeUnsupportedOperation},
		"unknown":       {"g", "nope", a2a.CodeTaskNotFound},
		"another agent": {"other", taskID, a2a.CodeTaskNotFound},
	} {
		resp, ans := e.rpc(e.admin, c.agent, call("SubscribeToTask", map[string]any{"id": c.id}))
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %s", name, resp.Header.Get("Content-Type"))
		}
		wantTaskError(t, name, ans, c.code)
	}
}

// A subscriber joining a task before its first word gets the whole answer
// as artifact updates: the working task first (no artifact yet), then the
// text; and a task cancelled while followed ends its subscribers'
// streams canceled.
func TestA2ASubscribeFromStartAndCancel(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, withSlowModel(slow))
	e.createAgent(e.admin, map[string]any{"name": "slow", "model": "scripted/slow"})
	_, ans := e.rpc(e.admin, "slow", call("SendMessage", map[string]any{"message": userMessage("talk", ""), "configuration": map[string]any{"returnImmediately": true}}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	sub := e.openStream("slow", call("SubscribeToTask", map[string]any{"id": taskID}))
	first, _ := sub.next()
	if path(first.Result, "task", "status", "state") != "TASK_STATE_WORKING" {
		t.Fatalf("first event = %+v", first)
	}
	known := answerText(first.Result["task"].(map[string]any))
	// Some words come, then the task is cancelled.
	var frames []rpcAnswer
	for len(frames) < 3 {
		f, ok := sub.next()
		if !ok {
			t.Fatal("the stream ended early")
		}
		frames = append(frames, f)
	}
	_, ans = e.rpc(e.admin, "slow", call("CancelTask", map[string]any{"id": taskID}))
	if path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask = %+v", ans)
	}
	got := follow(t, append(frames, sub.rest()...))
	if got.final != "TASK_STATE_CANCELED" || got.lastChunk || !strings.HasPrefix(known+got.text, "word word ") {
		t.Fatalf("followed = %+v (first %q)", got, known)
	}
	_, ans = e.rpc(e.admin, "slow", call("GetTask", map[string]any{"id": taskID}))
	if stored := answerText(ans.Result); stored != known+got.text {
		t.Fatalf("the subscriber has %q, the task %q", known+got.text, stored)
	}
}

// A task running on replica A is followed from replica B through Redis: B's
// stream starts with the answer A has so far and carries the rest as A
// streams it.
func TestA2ASubscribeAcrossReplicas(t *testing.T) {
	gated := &gatedModel{first: []string{"Hel", "lo "}, last: "world", release: make(chan struct{})}
	a, b := replicas(t, withGatedModel(gated))
	a.createAgent(a.admin, map[string]any{"name": "g"})
	_, ans := a.rpc(a.admin, "g", call("SendMessage", map[string]any{"message": userMessage("greet", ""), "configuration": map[string]any{"returnImmediately": true}}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	waitFor(t, "the first words", func() bool {
		_, ans = a.rpc(a.admin, "g", call("GetTask", map[string]any{"id": taskID}))
		return answerText(ans.Result) == "Hello "
	})
	sub := b.openStream("g", call("SubscribeToTask", map[string]any{"id": taskID}))
	first, _ := sub.next()
	task, _ := first.Result["task"].(map[string]any)
	hist, _ := task["history"].([]any)
	if path(task, "status", "state") != "TASK_STATE_WORKING" || answerText(task) != "Hello " || len(hist) != 1 {
		t.Fatalf("first event on B = %+v", first)
	}
	close(gated.release)
	got := follow(t, sub.rest())
	if got.text != "world" || !got.lastChunk || got.final != "TASK_STATE_COMPLETED" {
		t.Fatalf("on B after the task: %+v", got)
	}
	b.srv.a2aTasks.mu.Lock()
	n := len(b.srv.a2aTasks.watchers)
	b.srv.a2aTasks.mu.Unlock()
	if n != 0 {
		t.Fatalf("B still has %d watched tasks", n)
	}
}

// Without a bus between them, a subscriber on another replica gets the
// stored task (submitted or working, as stored), its stored changes of
// state, then the whole answer and the final status once the task is
// stored ended.
func TestA2ASubscribeWithoutBus(t *testing.T) {
	gated := &gatedModel{first: []string{"Hel", "lo "}, last: "world", release: make(chan struct{})}
	e := newEnv(t, nil, withGatedModel(gated))
	other := restarted(t, e) // a second server over the store, no Redis
	e.createAgent(e.admin, map[string]any{"name": "g"})
	_, ans := e.rpc(e.admin, "g", call("SendMessage", map[string]any{"message": userMessage("greet", ""), "configuration": map[string]any{"returnImmediately": true}}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	sub := other.openStream("g", call("tasks/resubscribe", map[string]any{"id": taskID}))
	first, _ := sub.next()
	state := path(first.Result, "status", "state")
	if first.Result["kind"] != "task" || (state != "submitted" && state != "working") || first.Result["artifacts"] != nil {
		t.Fatalf("first event = %+v", first)
	}
	waitFor(t, "the first words", func() bool {
		_, ans = e.rpc(e.admin, "g", call("GetTask", map[string]any{"id": taskID}))
		return answerText(ans.Result) == "Hello "
	})
	close(gated.release)
	// The store has no answer before the end: it comes whole.
	frames := sub.rest()
	if state == "submitted" && len(frames) > 0 && path(frames[0].Result, "status", "state") == "working" {
		frames = frames[1:]
	}
	last := frames[len(frames)-1].Result
	if len(frames) != 2 || path(frames[0].Result, "artifact", "parts") == nil || frames[0].Result["lastChunk"] != true || frames[0].Result["append"] == true ||
		path(last, "status", "state") != "completed" || last["final"] != true {
		t.Fatalf("after the task: %+v", frames)
	}
	parts := path(frames[0].Result, "artifact", "parts").([]any)
	if path(parts[0], "text") != "Hello world" {
		t.Fatalf("answer = %v", parts)
	}
}
