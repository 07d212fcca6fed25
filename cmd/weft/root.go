package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

// env is what a command may touch of the outside world. Tests replace all of
// it, so commands never read os.Stdin, os.Stdout, os.Stderr or os.Getenv
// directly.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130 // as a shell reports SIGINT
)

// usageError marks a mistake in the command line, reported with exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// newRootCmd builds the command tree. Each command lives in its own file
// and is added here.
func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "weft",
		Short: "Weft: LLM applications and agents in Go",
		Long: `weft asks models questions and (as its commands land) serves and manages
Weft's agent platform.

Models are named provider/model, e.g. openai/gpt-4o-mini. Providers read their
standard environment variables; run "weft models" to see which are configured.
WEFT_DEFAULT_MODEL sets the default model (of every command and of weft serve).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %q)", err, c.CommandPath()+" --help")}
	})
	root.AddCommand(
		newAskCmd(e),
		newModelsCmd(e),
		newVersionCmd(e),
		newServeCmd(e),
		newChatCmd(e),
		newAgentCmd(e),
		newSessionCmd(e),
		newToolCmd(e),
		newKBCmd(e),
		newAdminCmd(e),
		newKeyCmd(e),
		newApplyCmd(e),
		newWorkflowCmd(e),
		newEvalCmd(e),
	)
	return root
}

// run executes the command line and returns the process exit code. Errors
// are printed to stderr as one line.
func run(ctx context.Context, args []string, e *env) int {
	root := newRootCmd(e)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		// Cancelled by Ctrl-C: whatever failed after that is the interruption.
		fmt.Fprintln(e.stderr, "weft: interrupted")
		return exitInterrupted
	}
	// Whatever failed, a URL or DSN in the message keeps its password.
	fmt.Fprintln(e.stderr, "weft: "+oneLine(redact.URLs(describe(err, e.getenv))))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises the argument errors cobra reports without a type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires ") || strings.HasPrefix(msg, "unknown flag")
}

// describe turns an error into the message a user reads: a model error as
// the provider reported it (without the wrapping that repeats the provider's
// name), followed by what to do about it.
func describe(err error, getenv func(string) string) string {
	var me *llm.Error
	if !errors.As(err, &me) {
		return err.Error()
	}
	msg := me.Error()
	hint := hintFor(me, getenv)
	if errors.As(err, new(partialError)) {
		hint = "the answer above is incomplete"
	}
	if hint != "" && !strings.Contains(msg, hint) {
		msg += " — " + hint
	}
	return msg
}

// hintFor says what a user can do about a model error.
func hintFor(e *llm.Error, getenv func(string) string) string {
	p, known := provider.Lookup(e.Provider)
	envs := ""
	if known && len(p.Env) > 0 {
		envs = p.Env[0]
	}
	switch {
	case errors.Is(e, llm.ErrAuthentication):
		if envs != "" && !strings.Contains(e.Error(), envs) {
			return "check " + envs
		}
	case errors.Is(e, llm.ErrRateLimited):
		return "the provider is limiting requests: wait and retry, or choose another model with --model"
	case errors.Is(e, llm.ErrUnavailable):
		if e.StatusCode == 0 && known && len(p.Env) > 1 && getenv(p.Env[1]) != "" {
			return "is " + p.Env[1] + "=" + getenv(p.Env[1]) + " right, and the server up?"
		}
		return "the provider could not be reached or failed; try again later"
	case errors.Is(e, llm.ErrContextTooLong):
		return "shorten the prompt or choose a model with a larger context window"
	case errors.Is(e, llm.ErrStreamBroken):
		return "the model's answer broke off; try again"
	case errors.Is(e, llm.ErrTimeout):
		return "the model did not answer in time; try again"
	}
	return ""
}

// oneLine folds an error message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
