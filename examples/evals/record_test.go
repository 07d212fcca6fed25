package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/eval"
	"github.com/weftlabs/weft/llmtest"
)

// TestRecord records the suites against a stand-in for the OpenAI API
// (standIn: CI has no network and no key; with a real key, `weft eval
// run --record` records against OpenAI) and checks that the committed
// cassettes hold the same requests: a change of the agent, the prompts or
// the suites that changes what the model is asked fails here, saying to
// re-record. WEFT_EVAL_RECORD=1 writes the new cassettes to
// testdata/cassettes.
func TestRecord(t *testing.T) {
	provider := llmtest.NewServer()
	defer provider.Close()
	provider.SetResponder(standIn)
	dir := t.TempDir()
	if os.Getenv("WEFT_EVAL_RECORD") == "1" {
		dir = "testdata/cassettes"
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	cas := eval.NewCassettes(dir, llmtest.Record, nil)
	getenv := func(name string) string {
		switch name {
		case "OPENAI_BASE_URL":
			return provider.URL()
		case "OPENAI_API_KEY":
			return "sk-stand-in"
		}
		return ""
	}
	report, err := runSuites(t.Context(), ".", cas, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := report.Counts(); failed > 0 {
		var b strings.Builder
		report.WriteTable(&b, nil)
		t.Errorf("the recorded run failed cases:\n%s", b.String())
	}
	fresh, err := requests(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := requests("testdata/cassettes")
	if err != nil {
		t.Fatal(err)
	}
	for name, reqs := range fresh {
		if !slices.Equal(reqs, committed[name]) {
			t.Errorf("cassette %s is stale: its requests differ from a new recording; re-record with WEFT_EVAL_RECORD=1 go test ./examples/evals -run TestRecord", name)
		}
	}
	for name := range committed {
		if _, ok := fresh[name]; !ok {
			t.Errorf("cassette %s is recorded by no case", name)
		}
	}
}

// requests returns the requests of every cassette under dir, by path:
// method, path and body with its keys sorted.
func requests(dir string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var tape struct {
			Interactions []struct {
				Request struct{ Method, Path, Body string }
			}
		}
		if err := json.Unmarshal(b, &tape); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(dir, path)
		reqs := []string{}
		for _, it := range tape.Interactions {
			var body any
			json.Unmarshal([]byte(it.Request.Body), &body)
			canon, _ := json.Marshal(body)
			reqs = append(reqs, it.Request.Method+" "+it.Request.Path+" "+string(canon))
		}
		out[rel] = reqs
		return nil
	})
	return out, err
}

var (
	orderID   = regexp.MustCompile(`\b[A-Z]\d{4}\b`)
	shipTo    = regexp.MustCompile(`(\d+(?:\.\d+)?) ?kg to ([A-Z][a-z]+)`)
	ticketAsk = regexp.MustCompile(`(?i)complain|speak to a human|ticket`)
	forbidden = regexp.MustCompile(`(?i)password|credit card`)
	words     = regexp.MustCompile(`[a-z0-9]+`)
)

// standIn answers as a small, deterministic support model would: the
// judge's requests with a score, the workflow's classification as JSON,
// and the agent's turns by calling the tool a message asks for, summing
// up tool results, refusing what it must, and quoting the handbook line
// closest to the question.
func standIn(r *llmtest.Request) llmtest.Turn {
	system := ""
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		system = r.Messages[0].Text()
	}
	user := r.LastUserText()
	switch {
	case strings.HasPrefix(system, "You are a strict, fair evaluator"):
		return judgeTurn(user)
	case strings.HasPrefix(system, "Classify support tickets."):
		return classify(user)
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role == "tool" {
		return summarize(r)
	}
	question, context, _ := strings.Cut(user, "\n\nAnswer using the following information:\n")
	switch {
	case forbidden.MatchString(question):
		return llmtest.Reply("I'm sorry, but I can't help with that: I never share passwords or payment details.")
	case strings.Contains(question, "JSON"):
		return llmtest.Reply(`{"return_days": 30}`)
	}
	var calls []llmtest.ToolCall
	if id := orderID.FindString(question); id != "" && !forbidden.MatchString(question) {
		calls = append(calls, llmtest.ToolCall{Name: "order_status", Arguments: fmt.Sprintf(`{"order_id":%q}`, id)})
	}
	if m := shipTo.FindStringSubmatch(question); m != nil {
		calls = append(calls, llmtest.ToolCall{Name: "shipping_quote", Arguments: fmt.Sprintf(`{"country":%q,"weight_kg":%s}`, m[2], m[1])})
	}
	if ticketAsk.MatchString(question) {
		priority := "normal"
		if strings.Contains(strings.ToLower(question), "urgent") {
			priority = "high"
		}
		subject, _ := json.Marshal(question)
		calls = append(calls, llmtest.ToolCall{Name: "create_ticket", Arguments: fmt.Sprintf(`{"subject":%s,"priority":%q}`, subject, priority)})
	}
	if len(calls) > 0 {
		return llmtest.CallTools(calls...)
	}
	if context != "" {
		if line, n := bestLine(question, context); line != "" {
			return llmtest.Reply(fmt.Sprintf("%s [%d]", line, n))
		}
	}
	return llmtest.Reply("Hello! I can help with orders, shipping, returns and caring for your textiles.")
}

// bestLine returns the context line sharing the most words with the
// question, and the number of its source.
func bestLine(question, context string) (string, int) {
	q := map[string]bool{}
	for _, w := range words.FindAllString(strings.ToLower(question), -1) {
		if len(w) > 3 && !stopWords[w] {
			q[prefix(w)] = true
		}
	}
	best, bestN, bestScore, source := "", 0, 0, 0
	for _, line := range strings.Split(context, "\n") {
		if strings.HasPrefix(line, "[") {
			fmt.Sscanf(line, "[%d]", &source)
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		score := 0
		for _, w := range words.FindAllString(strings.ToLower(line), -1) {
			if q[prefix(w)] {
				score++
			}
		}
		if score > bestScore {
			best, bestN, bestScore = strings.TrimSpace(line), source, score
		}
	}
	return best, bestN
}

var stopWords = map[string]bool{"when": true, "what": true, "which": true, "have": true, "does": true,
	"your": true, "with": true, "from": true, "that": true, "this": true, "long": true, "much": true}

// prefix is a crude stem: a word's first five letters.
func prefix(w string) string {
	if len(w) > 5 {
		return w[:5]
	}
	return w
}

// summarize answers from the tool results since the last user message.
func summarize(r *llmtest.Request) llmtest.Turn {
	var parts []string
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out := r.Messages[i].Text()
		var v map[string]any
		switch {
		case json.Unmarshal([]byte(out), &v) != nil:
			parts = append(parts, "I could not find that order: "+out)
		case v["ticket"] != nil:
			parts = append(parts, fmt.Sprintf("I opened ticket %v; a colleague will get back to you.", v["ticket"]))
		case v["price_eur"] != nil:
			parts = append(parts, fmt.Sprintf("Shipping to %v costs %v euros and takes %v days.", v["country"], v["price_eur"], v["days"]))
		case v["status"] == "delivered":
			parts = append(parts, fmt.Sprintf("Order %v was delivered on %v.", v["order_id"], v["delivered_on"]))
		default:
			parts = append(parts, fmt.Sprintf("Order %v has %v; it should arrive on %v.", v["order_id"], v["status"], v["eta"]))
		}
	}
	// The results came last first.
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return llmtest.Reply(strings.Join(parts, " "))
}

// judgeTurn scores an answer: well when it is there and not a refusal.
func judgeTurn(prompt string) llmtest.Turn {
	_, answer, _ := strings.Cut(prompt, "\nAnswer:\n")
	answer, _, _ = strings.Cut(answer, "\n\n")
	score, reason := 0.9, "The answer addresses the rubric and stays within the context."
	if strings.TrimSpace(answer) == "" || strings.Contains(answer, "I'm sorry") {
		score, reason = 0.2, "The answer does not address the rubric."
	}
	return llmtest.Reply(fmt.Sprintf(`{"score": %v, "reason": %q}`, score, reason))
}

// classify labels a ticket by its words.
func classify(prompt string) llmtest.Turn {
	t := strings.ToLower(prompt)
	category := "other"
	switch {
	case strings.Contains(t, "charge") || strings.Contains(t, "invoice") || strings.Contains(t, "refund"):
		category = "billing"
	case strings.Contains(t, "seam") || strings.Contains(t, "torn") || strings.Contains(t, "broken"):
		category = "quality"
	case strings.Contains(t, "parcel") || strings.Contains(t, "late") || strings.Contains(t, "delivery"):
		category = "shipping"
	}
	urgency := "low"
	if strings.Contains(t, "urgent") {
		urgency = "high"
	}
	return llmtest.Reply(fmt.Sprintf(`{"category": %q, "urgency": %q}`, category, urgency))
}
