package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

func newSessionCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:   "session",
		Short: "List and read the chat sessions of a running weft server",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newSessionListCmd(e, &r), newSessionShowCmd(e, &r))
	return cmd
}

func newSessionListCmd(e *env, r *remoteFlags) *cobra.Command {
	var agentRef string
	cmd := &cobra.Command{
		Use:     "list [--agent AGENT]",
		Aliases: []string{"ls"},
		Short:   "List sessions, of one agent with --agent",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			agents, err := c.ListAgents(ctx)
			if err != nil {
				return remoteError(err, c)
			}
			names := map[string]string{}
			agentID := ""
			for _, a := range agents {
				names[a.ID] = a.Name
				if agentRef != "" && (a.ID == agentRef || a.Name == agentRef) {
					agentID = a.ID
				}
			}
			if agentRef != "" && agentID == "" {
				return fmt.Errorf("no agent named or with id %q (see \"weft agent list\")", agentRef)
			}
			sessions, err := c.ListSessions(ctx, agentID)
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if sessions == nil {
					sessions = []client.Session{}
				}
				return printJSON(e, sessions)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tMESSAGES\tCREATED\tUPDATED")
			for _, s := range sessions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, orDash(names[s.AgentID], s.AgentID), s.MessageCount, when(s.CreatedAt), when(s.UpdatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&agentRef, "agent", "", "only the sessions of this agent (name or id)")
	return cmd
}

func newSessionShowCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's messages in order",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			msgs, err := c.Messages(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if msgs == nil {
					msgs = []client.Message{}
				}
				return printJSON(e, msgs)
			}
			for i, m := range msgs {
				if i > 0 {
					fmt.Fprintln(e.stdout)
				}
				fmt.Fprintln(e.stdout, messageHeader(m))
				if m.Content != "" {
					for l := range strings.Lines(m.Content) {
						fmt.Fprint(e.stdout, "  "+l)
					}
					if !strings.HasSuffix(m.Content, "\n") {
						fmt.Fprintln(e.stdout)
					}
				}
				for _, tc := range m.ToolCalls {
					fmt.Fprintf(e.stdout, "  → %s %s\n", tc.Name, tc.Arguments)
				}
			}
			return nil
		},
	}
}

// messageHeader is the first line of a message in "weft session show".
func messageHeader(m client.Message) string {
	var b strings.Builder
	b.WriteString("[" + m.Role)
	if m.Role == "tool" && m.Name != "" {
		b.WriteString(" " + m.Name)
	}
	b.WriteString("] " + when(m.CreatedAt))
	if m.Partial {
		b.WriteString(" (partial: the turn did not complete)")
	}
	if m.IsError {
		b.WriteString(" (error)")
	}
	if len(m.ToolCalls) > 0 {
		b.WriteString(" " + strconv.Itoa(len(m.ToolCalls)) + " tool call(s)")
	}
	return b.String()
}
