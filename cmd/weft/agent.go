package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/weftlabs/weft/platform/client"
)

func newAgentCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Manage the agents of a running weft server",
		Long: `Manage the agents of a running weft server: apply them from YAML or JSON files,
list, show and remove them. AGENT is a name or an id.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newAgentApplyCmd(e, &r), newAgentListCmd(e, &r), newAgentShowCmd(e, &r), newAgentRmCmd(e, &r))
	return cmd
}

// maxAgentFile bounds an agent file.
const maxAgentFile = 4 << 20

func newAgentApplyCmd(e *env, r *remoteFlags) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update agents, by name, from a YAML or JSON file",
		Long: `Create or update agents from a YAML or JSON file ("-" reads stdin). An agent
whose name exists is updated: the fields the file sets replace the stored
ones. A YAML file may hold several agents, separated by "---". The fields are
those of the API (name, system_prompt, model, temperature, max_tokens,
context_window_tokens, reserve_tokens, knowledge_base_ids, retrieval, tool_ids,
delegate_agent_ids, max_tool_rounds, max_delegate_depth, enabled).`,
		Example: `  weft agent apply -f support.yaml

  # support.yaml
  name: support
  system_prompt: You answer questions about our product. Be brief.
  model: openai/gpt-4o-mini
  temperature: 0.2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{errors.New("no file: pass -f FILE (or -f - for stdin)")}
			}
			agents, err := readAgentFile(e, file)
			if err != nil {
				return err
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			var out []client.Agent
			for _, a := range agents {
				got, created, err := c.ApplyAgent(cmd.Context(), a)
				if err != nil {
					return fmt.Errorf("agent %q: %w", a.Name, remoteError(err, c))
				}
				out = append(out, got)
				if !r.json {
					verb := "updated"
					if created {
						verb = "created"
					}
					fmt.Fprintf(e.stdout, "agent %s %s (%s)\n", got.Name, verb, got.ID)
				}
			}
			if r.json {
				return printJSON(e, out)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML or JSON file of the agent(s); - for stdin")
	return cmd
}

// readAgentFile parses the agents of a YAML or JSON file (JSON is YAML).
// Unknown fields are errors, so that a misspelt field is not silently
// ignored.
func readAgentFile(e *env, name string) ([]client.Agent, error) {
	var rd io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rd = f
	}
	data, err := io.ReadAll(io.LimitReader(rd, maxAgentFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > maxAgentFile {
		return nil, fmt.Errorf("%s is over %d MiB", name, maxAgentFile>>20)
	}
	var out []client.Agent
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if doc == nil {
			continue
		}
		where := name
		if i > 1 {
			where += " (document " + strconv.Itoa(i) + ")"
		}
		if _, ok := doc.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: want a mapping of agent fields, got %T", where, doc)
		}
		// Through JSON, so the API's field names and types apply.
		j, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		jd := json.NewDecoder(bytes.NewReader(j))
		jd.DisallowUnknownFields()
		var a client.Agent
		if err := jd.Decode(&a); err != nil {
			return nil, fmt.Errorf("%s: %s", where, strings.TrimPrefix(err.Error(), "json: "))
		}
		if strings.TrimSpace(a.Name) == "" {
			return nil, fmt.Errorf("%s: field \"name\" is required", where)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no agent", name)
	}
	return out, nil
}

func newAgentListCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the agents",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			agents, err := c.ListAgents(cmd.Context())
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if agents == nil {
					agents = []client.Agent{}
				}
				return printJSON(e, agents)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tMODEL\tENABLED\tUPDATED")
			for _, a := range agents {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, a.ID, orDash(a.Model, "(server default)"), yesNo(a.IsEnabled()), when(a.UpdatedAt))
			}
			return tw.Flush()
		},
	}
}

func newAgentShowCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show AGENT",
		Short: "Show an agent's configuration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			a, err := c.FindAgent(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				return printJSON(e, a)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
			row("name", a.Name)
			row("id", a.ID)
			row("model", orDash(a.Model, "(server default)"))
			row("enabled", yesNo(a.IsEnabled()))
			if a.Temperature != nil {
				row("temperature", strconv.FormatFloat(*a.Temperature, 'g', -1, 64))
			}
			if a.MaxTokens != nil {
				row("max_tokens", strconv.Itoa(*a.MaxTokens))
			}
			row("context_window_tokens", strconv.Itoa(a.ContextWindowTokens))
			row("reserve_tokens", strconv.Itoa(a.ReserveTokens))
			row("knowledge_base_ids", list(a.KnowledgeBaseIDs))
			if a.Retrieval != nil {
				row("retrieval", fmt.Sprintf("top_k %d, mode %s, min_score %g", a.Retrieval.TopK, a.Retrieval.Mode, a.Retrieval.MinScore))
			}
			row("tool_ids", list(a.ToolIDs))
			row("delegate_agent_ids", list(a.DelegateAgentIDs))
			row("max_tool_rounds", strconv.Itoa(a.MaxToolRounds))
			row("max_delegate_depth", strconv.Itoa(a.MaxDelegateDepth))
			if a.Remote != nil {
				if a.Remote.Protocol == "a2a" {
					row("remote", "A2A agent at "+a.Remote.URL)
				} else {
					row("remote", a.Remote.URL+" agent "+a.Remote.AgentID)
				}
			}
			row("created", when(a.CreatedAt))
			row("updated", when(a.UpdatedAt))
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "system_prompt:")
			prompt := a.SystemPrompt
			if prompt == "" {
				prompt = "(none)"
			}
			for l := range strings.Lines(prompt) {
				fmt.Fprint(e.stdout, "  "+l)
			}
			if !strings.HasSuffix(prompt, "\n") {
				fmt.Fprintln(e.stdout)
			}
			return nil
		},
	}
}

func newAgentRmCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm AGENT...",
		Aliases: []string{"delete"},
		Short:   "Remove agents",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			for _, ref := range args {
				a, err := c.FindAgent(cmd.Context(), ref)
				if err != nil {
					return remoteError(err, c)
				}
				if err := c.DeleteAgent(cmd.Context(), a.ID); err != nil {
					return remoteError(err, c)
				}
				if !r.json {
					fmt.Fprintf(e.stdout, "agent %s removed (%s)\n", a.Name, a.ID)
				}
			}
			if r.json {
				return printJSON(e, map[string]any{"removed": args})
			}
			return nil
		},
	}
}

func orDash(s, dash string) string {
	if s == "" {
		return dash
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func list(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return strings.Join(ss, ", ")
}

// when formats a time for tables: local, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}
