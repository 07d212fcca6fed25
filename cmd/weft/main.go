// Command weft is Weft's command-line tool: ask a model a question, list the
// model providers and their configuration, and (as they land) serve the
// agent platform and manage its agents, knowledge bases, tools and
// sessions.
//
//	weft ask "What is the capital of France?"
//	echo "Summarise this" | weft ask --model anthropic/claude-3-5-haiku-latest
//	weft models
//	weft version
//
// Models are named "provider/model". Providers read their standard
// environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, OLLAMA_HOST, …);
// WEFT_DEFAULT_MODEL sets the default model. With nothing configured, weft uses the
// offline demo model scripted/demo.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C cancels the command, a second one kills
		// the process the default way.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}
