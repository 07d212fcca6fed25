package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

func newChatCmd(e *env) *cobra.Command {
	var r remoteFlags
	var session string
	cmd := &cobra.Command{
		Use:   "chat AGENT",
		Short: "Chat with an agent of a running weft server",
		Long: `Chat with an agent (by name or id) of a running weft server. Each line read from
stdin is a message; the answer streams to stdout as the agent produces it.
The conversation keeps its session: "/new" starts a new one, "/exit" (or
end of input) quits. --session resumes an earlier session.

The server is --url, else $WEFT_URL, else ` + defaultURL + `; the key is --key,
else $WEFT_API_KEY, else the admin key a local "weft serve" wrote to
./` + adminKeyFile + `.`,
		Example: `  weft chat support
  weft chat support --session ses_0123abcd
  echo "What are your opening hours?" | weft chat support`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			return chat(cmd.Context(), e, c, args[0], session)
		},
	}
	r.register(cmd)
	cmd.Flags().StringVar(&session, "session", "", "resume this session")
	return cmd
}

// maxChatLine bounds one line of chat input (the server takes queries of
// up to 64 KiB).
const maxChatLine = 1 << 20

func chat(ctx context.Context, e *env, c *client.Client, ref, session string) error {
	agent, err := c.FindAgent(ctx, ref)
	if err != nil {
		return remoteError(err, c)
	}
	if session != "" {
		s, err := c.GetSession(ctx, session)
		if err != nil {
			return remoteError(err, c)
		}
		if s.AgentID != agent.ID {
			return usageError{fmt.Errorf("session %s belongs to another agent (%s), not %s", session, s.AgentID, agent.Name)}
		}
	}
	interactive := isTerminal(e.stdin)
	if interactive {
		fmt.Fprintf(e.stderr, "Chatting with %s (%s). /new starts a new session, /exit or Ctrl-D quits.\n", agent.Name, agent.ID)
	}
	lines := readLines(ctx, e.stdin)
	for {
		if interactive {
			fmt.Fprint(e.stderr, "> ")
		}
		var line string
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok := <-lines:
			if !ok {
				if interactive {
					fmt.Fprintln(e.stderr)
				}
				return nil
			}
			if l.err != nil {
				return fmt.Errorf("reading stdin: %w", l.err)
			}
			line = strings.TrimSpace(l.text)
		}
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/new":
			session = ""
			fmt.Fprintln(e.stderr, "weft: the next message starts a new session")
			continue
		}
		next, err := chatTurn(ctx, e, c, agent.ID, session, line)
		if next != "" {
			session = next
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ce *client.Error
			if !interactive || !errors.As(err, &ce) {
				return remoteError(err, c)
			}
			// The server refused or failed this turn: say so and go on
			// reading, as a chat does.
			fmt.Fprintln(e.stderr, "weft: "+oneLine(remoteError(err, c).Error()))
		}
	}
}

// chatTurn streams one answer to stdout. It returns the session the turn
// ran in.
func chatTurn(ctx context.Context, e *env, c *client.Client, agentID, session, query string) (string, error) {
	endsInNewline := true
	defer func() {
		if !endsInNewline {
			fmt.Fprintln(e.stdout)
			flush(e.stdout)
		}
	}()
	for ev, err := range c.ChatStream(ctx, agentID, client.ChatRequest{Query: query, SessionID: session}) {
		if err != nil {
			return session, err
		}
		switch ev.Type {
		case client.EventCreated:
			if session == "" {
				fmt.Fprintf(e.stderr, "weft: session %s (resume it with --session %s)\n", ev.SessionID, ev.SessionID)
			}
			session = ev.SessionID
		case client.EventMessageDelta:
			if ev.Text == "" {
				continue
			}
			if _, err := io.WriteString(e.stdout, ev.Text); err != nil {
				return session, fmt.Errorf("writing the answer: %w", err)
			}
			flush(e.stdout)
			endsInNewline = strings.HasSuffix(ev.Text, "\n")
		case client.EventToolCall:
			fmt.Fprintf(e.stderr, "weft: calling tool %s %s\n", ev.Name, ev.Arguments)
		case client.EventToolResult:
			if !ev.OK {
				fmt.Fprintf(e.stderr, "weft: tool %s failed: %s\n", ev.Name, oneLine(ev.Error))
			}
		case client.EventDelegateStart:
			fmt.Fprintf(e.stderr, "weft: delegating to agent %s\n", ev.AgentID)
		}
	}
	return session, nil
}

type lineResult struct {
	text string
	err  error
}

// readLines reads r line by line in a goroutine, so that a read blocked on
// a terminal does not keep the command from ending when ctx does (the
// process exits right after).
func readLines(ctx context.Context, r io.Reader) <-chan lineResult {
	ch := make(chan lineResult)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxChatLine)
		for sc.Scan() {
			select {
			case ch <- lineResult{text: sc.Text()}:
			case <-ctx.Done():
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("a line is over %d KiB", maxChatLine>>10)
			}
			select {
			case ch <- lineResult{err: err}:
			case <-ctx.Done():
			}
		}
	}()
	return ch
}

// isTerminal reports whether r is an interactive terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
