package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

type askOptions struct {
	model       string
	system      string
	temperature float64
	maxTokens   int
	verbose     bool
}

func newAskCmd(e *env) *cobra.Command {
	var o askOptions
	cmd := &cobra.Command{
		Use:   "ask [flags] [PROMPT...]",
		Short: "Ask a model one question and stream its answer",
		Long: `Ask a model one question and stream its answer to stdout as it is produced.

The prompt is the arguments joined by spaces, or stdin when there are none.
Without --model, weft uses $WEFT_DEFAULT_MODEL, else the first configured provider
(OpenAI if OPENAI_API_KEY is set, then Anthropic, …), else the offline demo
model scripted/demo.`,
		Example: `  weft ask "Why is the sky blue?"
  weft ask --model openai/gpt-4o-mini --system "Answer in French" "Hello"
  git diff | weft ask --model anthropic "Write a commit message for this diff"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return ask(cmd.Context(), e, o, args, cmd.Flags().Changed("temperature"))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.model, "model", "m", "", "model as provider/model (default $WEFT_DEFAULT_MODEL — or the deprecated $WEFT_MODEL —, else the first configured provider)")
	f.StringVarP(&o.system, "system", "s", "", "system prompt")
	f.Float64VarP(&o.temperature, "temperature", "t", 0, "sampling temperature (default: the model's)")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "cap on the answer's tokens (default: the model's)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print the model, token usage and latency to stderr")
	return cmd
}

func ask(ctx context.Context, e *env, o askOptions, args []string, temperatureSet bool) error {
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if prompt == "" {
		p, err := readPrompt(ctx, e)
		if err != nil {
			return err
		}
		prompt = p
	}
	if prompt == "" {
		return usageError{errors.New("no prompt: pass it as arguments or on stdin")}
	}

	spec := o.model
	if spec == "" {
		var note string
		spec, note = defaultModel(e.getenv)
		if note != "" {
			fmt.Fprintln(e.stderr, "weft: "+note)
		}
	}
	hook := func(_ context.Context, ev llm.Event) {
		if ev.Kind == llm.EventRetry && o.verbose {
			fmt.Fprintf(e.stderr, "weft: attempt %d failed (%s); retrying in %v\n", ev.Attempt, oneLine(ev.Err.Error()), ev.Delay.Round(time.Millisecond))
		}
	}
	if err := checkProvider(spec); err != nil {
		return err
	}
	model, err := provider.Open(spec, provider.WithGetenv(e.getenv), provider.WithModelOptions(llm.WithHook(hook)))
	if err != nil {
		return err
	}

	req := &llm.Request{MaxTokens: o.maxTokens}
	if o.system != "" {
		req.Messages = append(req.Messages, llm.SystemMessage(o.system))
	}
	req.Messages = append(req.Messages, llm.UserMessage(prompt))
	if temperatureSet {
		req.Temperature = llm.Ptr(o.temperature)
	}

	start := time.Now()
	var firstToken time.Duration
	var acc llm.Accumulator
	endsInNewline := true
	for c, err := range model.Stream(ctx, req) {
		if err != nil {
			if firstToken == 0 {
				return err
			}
			if !endsInNewline {
				fmt.Fprintln(e.stdout)
			}
			return partialError{err}
		}
		acc.Add(c)
		switch c.Type {
		case llm.ChunkText:
			if c.Text == "" {
				continue
			}
			if firstToken == 0 {
				firstToken = time.Since(start)
			}
			if _, err := io.WriteString(e.stdout, c.Text); err != nil {
				return fmt.Errorf("writing the answer: %w", err)
			}
			flush(e.stdout)
			endsInNewline = strings.HasSuffix(c.Text, "\n")
		case llm.ChunkReasoning:
			if o.verbose {
				io.WriteString(e.stderr, c.Text)
			}
		}
	}
	if !endsInNewline {
		fmt.Fprintln(e.stdout)
		flush(e.stdout)
	}
	resp := acc.Response()
	switch resp.FinishReason {
	case llm.FinishLength:
		fmt.Fprintln(e.stderr, "weft: the answer was cut off at the token limit (raise --max-tokens)")
	case llm.FinishContentFilter:
		fmt.Fprintln(e.stderr, "weft: the provider's content filter stopped the answer")
	}
	if len(resp.Message.ToolCalls) > 0 {
		fmt.Fprintf(e.stderr, "weft: the model asked to call %d tool(s), which ask does not run\n", len(resp.Message.ToolCalls))
	}
	if o.verbose {
		name := model.Name()
		if resp.Model != "" && resp.Model != name && !strings.HasSuffix(name, "/"+resp.Model) {
			name += " (" + resp.Model + ")"
		}
		u := resp.Usage
		fmt.Fprintf(e.stderr, "model: %s\ntokens: %d prompt + %d completion = %d total\nlatency: first token %v, total %v\n",
			name, u.PromptTokens, u.CompletionTokens, u.TotalTokens,
			roundDuration(firstToken), roundDuration(time.Since(start)))
	}
	return nil
}

// partialError is a failure after part of the answer was printed.
type partialError struct{ err error }

func (e partialError) Error() string { return e.err.Error() }
func (e partialError) Unwrap() error { return e.err }

// checkProvider reports a model spec whose provider is unknown, listing the
// known ones.
func checkProvider(spec string) error {
	name, _, err := provider.ParseSpec(spec)
	if err != nil {
		return usageError{err}
	}
	if _, ok := provider.Lookup(name); !ok {
		return usageError{fmt.Errorf("unknown provider %q in model %q; known providers: %s (see \"weft models\")",
			name, spec, strings.Join(provider.Names(), ", "))}
	}
	return nil
}

// roundDuration rounds d for display: to milliseconds, or to microseconds
// below 10ms (an offline model answers in microseconds).
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// flush pushes buffered output to the terminal, for writers that buffer.
func flush(w io.Writer) {
	switch f := w.(type) {
	case interface{ Flush() error }:
		f.Flush()
	case interface{ Flush() }:
		f.Flush()
	}
}

// maxPrompt bounds a prompt read from stdin.
const maxPrompt = 16 << 20

// readPrompt reads the prompt from stdin, giving up when ctx ends (a
// terminal read cannot be interrupted, so it runs in a goroutine that is
// abandoned when the command is cancelled; the process exits right after).
func readPrompt(ctx context.Context, e *env) (string, error) {
	if f, ok := e.stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintln(e.stderr, "weft: reading the prompt from the terminal; end it with Ctrl-D")
		}
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(e.stdin, maxPrompt+1))
		done <- result{b, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-done:
		if r.err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", r.err)
		}
		if len(r.b) > maxPrompt {
			return "", usageError{fmt.Errorf("the prompt on stdin is over %d MiB", maxPrompt>>20)}
		}
		return strings.TrimSpace(string(r.b)), nil
	}
}
