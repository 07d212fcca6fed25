// Command workflow runs a support workflow: classify a ticket, retrieve
// from a help centre, draft a reply, check it, then send it or escalate.
// The workflow is data (support.yaml), checked before it runs; the models
// and the knowledge base are services the program plugs in. It runs
// offline on scripted models; set WEFT_DEFAULT_MODEL (for example
// openai/gpt-4o-mini, with OPENAI_API_KEY) to use a real one for every
// node.
//
//	go run ./examples/workflow "I was charged twice for my plan, please refund me."
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/workflow"
)

//go:embed support.yaml
var definition []byte

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	d, err := workflow.Parse(definition)
	if err != nil {
		return err
	}
	if err := d.Validate(); err != nil {
		return err
	}
	models, err := openModels()
	if err != nil {
		return err
	}
	e := workflow.New(workflow.Services{
		Model: func(ctx context.Context, name string) (llm.ChatModel, error) {
			if m, ok := models[name]; ok {
				return m, nil
			}
			return nil, fmt.Errorf("no model %q", name)
		},
		Knowledge: helpCenter,
	})
	ticket := "I was charged twice for my plan this month, please refund me."
	if len(args) > 0 {
		ticket = strings.Join(args, " ")
	}
	for ev, err := range e.Run(ctx, d, map[string]any{"ticket": ticket}) {
		if err != nil {
			return err
		}
		switch ev.Type {
		case workflow.NodeFinished:
			fmt.Fprintf(w, "%-9s %-9s %s\n", ev.Key, ev.Status, summary(ev.Outputs))
		case workflow.WorkflowFinished:
			fmt.Fprintf(w, "\ncategory: %s\n", ev.Outputs["category"])
			for _, k := range []string{"sent", "escalated"} {
				if s, ok := ev.Outputs[k].(string); ok && s != "" {
					fmt.Fprintln(w, s)
				}
			}
		}
	}
	return nil
}

// summary prints a node's outputs on one line, long texts cut.
func summary(outs map[string]any) string {
	var parts []string
	for k, v := range outs {
		if k == "fragments" {
			continue
		}
		s := strings.ReplaceAll(fmt.Sprint(v), "\n", " ")
		if len(s) > 48 {
			s = s[:45] + "..."
		}
		parts = append(parts, k+"="+s)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// openModels returns the three models the workflow names: one real model
// for all when WEFT_DEFAULT_MODEL is set, otherwise scripted ones that
// behave like a classifier, a writer and a reviewer.
func openModels() (map[string]llm.ChatModel, error) {
	if spec := os.Getenv("WEFT_DEFAULT_MODEL"); spec != "" {
		m, err := provider.Open(spec)
		if err != nil {
			return nil, err
		}
		return map[string]llm.ChatModel{"classifier": m, "writer": m, "checker": m}, nil
	}
	billing := regexp.MustCompile(`(?i)refund|charged|invoice`)
	bug := regexp.MustCompile(`(?i)crash|error|bug`)
	urgent := regexp.MustCompile(`(?i)lawyer|urgent|immediately`)
	return map[string]llm.ChatModel{
		"classifier": scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
			ticket := req.Messages[len(req.Messages)-1].Text()
			label := map[string]string{"category": "other", "urgency": "low"}
			switch {
			case bug.MatchString(ticket):
				label["category"] = "bug"
			case billing.MatchString(ticket):
				label["category"] = "billing"
			}
			if urgent.MatchString(ticket) {
				label["urgency"] = "high"
			}
			b, err := json.Marshal(label)
			return &llm.Response{Message: llm.AssistantMessage(string(b))}, err
		}}),
		"writer": scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
			// Quote the first line of the context, as a grounded model would.
			text := req.Messages[len(req.Messages)-1].Text()
			ctx, _, _ := strings.Cut(strings.TrimPrefix(text, "Context:\n"), "\n")
			if strings.TrimSpace(ctx) == "" {
				ctx = "A colleague will look into this."
			}
			return &llm.Response{Message: llm.AssistantMessage("Hello, thank you for writing. " + ctx)}, nil
		}}),
		"checker": scripted.New(
			scripted.WhenUserSays(regexp.MustCompile(`colleague`), scripted.ReplyJSON(map[string]any{"approved": false, "reason": "no help-centre answer"})),
			scripted.ReplyJSON(map[string]any{"approved": true, "reason": "grounded in the help centre"}),
		),
	}, nil
}

// articles is the help centre the knowledge service recalls from.
var articles = []workflow.Fragment{
	{Source: "billing/refunds.md", Text: "Duplicate charges are refunded automatically within 5 business days."},
	{Source: "billing/invoices.md", Text: "Invoices are under Settings, Billing; each charge has its own invoice."},
	{Source: "bugs/report.md", Text: "To report a bug, include the steps, what you expected and what happened."},
}

// helpCenter scores articles by the words they share with the query.
func helpCenter(ctx context.Context, req workflow.KnowledgeRequest) ([]workflow.Fragment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	words := map[string]bool{}
	for _, w := range terms(req.Query) {
		words[w] = true
	}
	var out []workflow.Fragment
	for _, a := range articles {
		n := 0
		for _, w := range terms(a.Source + " " + a.Text) {
			if words[w] {
				n++
			}
		}
		if n > 0 {
			a.Score = float64(n)
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b workflow.Fragment) int { return int(b.Score - a.Score) })
	if req.TopK > 0 && len(out) > req.TopK {
		out = out[:req.TopK]
	}
	return out, nil
}

// terms are the words of s longer than three letters, cut to five letters
// so that "charged" meets "charges" and "refund" meets "refunded".
func terms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) > 3 {
			out = append(out, w[:min(len(w), 5)])
		}
	}
	return out
}
