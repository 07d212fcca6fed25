package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/tool"
)

func newToolCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:   "tool",
		Short: "Manage the tools of a running weft server",
		Long: `Register the tools agents may call — HTTP endpoints, MCP servers and SQL
queries — list, refresh and remove them. Agents whitelist tools by id in
tool_ids (see "weft agent apply"). TOOL is a name or an id.

Registering an MCP server connects to it and lists its tools: each becomes a
tool of its own, named <server>_<tool>, that agents whitelist one by one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newToolAddHTTPCmd(e, &r), newToolAddMCPCmd(e, &r), newToolAddSQLCmd(e, &r),
		newToolListCmd(e, &r), newToolShowCmd(e, &r), newToolRmCmd(e, &r), newToolRefreshCmd(e, &r), newToolTryCmd(e, &r))
	return cmd
}

// serverFlag gives the commands whose --url is the tool's the server's URL
// under another name.
func serverFlag(cmd *cobra.Command, r *remoteFlags) {
	cmd.Flags().StringVar(&r.url, "server", "", "URL of the weft server (default $WEFT_URL, else "+defaultURL+"); --url is the tool's here")
}

// schemaFlags are the ways to give a tool's parameters.
type schemaFlags struct {
	params []string
	schema string
}

func (s *schemaFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&s.params, "param", nil, `a parameter as name:type[:description] (type string, integer, number or boolean;
a name ending in "?" is optional); repeat for each`)
	cmd.Flags().StringVar(&s.schema, "parameters", "", "the parameters as a JSON Schema object (instead of --param)")
}

// parameters returns the JSON Schema the flags describe; nil when none.
func (s *schemaFlags) parameters() (json.RawMessage, error) {
	if s.schema != "" && len(s.params) > 0 {
		return nil, usageError{errors.New("give either --param or --parameters, not both")}
	}
	if s.schema != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(s.schema), &obj); err != nil {
			return nil, usageError{fmt.Errorf("--parameters: want a JSON Schema object: %s", strings.TrimPrefix(err.Error(), "json: "))}
		}
		return json.RawMessage(s.schema), nil
	}
	if len(s.params) == 0 {
		return nil, nil
	}
	return paramSchema(s.params)
}

// paramSchema builds the JSON Schema object of --param name:type[:description]
// values.
func paramSchema(params []string) (json.RawMessage, error) {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	}
	props := map[string]prop{}
	required := []string{}
	for _, p := range params {
		name, rest, ok := strings.Cut(p, ":")
		typ, desc, _ := strings.Cut(rest, ":")
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		switch {
		case !ok || name == "":
			return nil, usageError{fmt.Errorf("--param %q: want name:type[:description], e.g. city:string:the city's name", p)}
		case !tool.ValidName(name):
			return nil, usageError{fmt.Errorf("--param %q: a name is 1 to 64 letters, digits, _ or - (use --parameters for others)", p)}
		case !slices.Contains([]string{"string", "integer", "number", "boolean"}, typ):
			return nil, usageError{fmt.Errorf("--param %q: type %q: want string, integer, number or boolean (use --parameters for others)", p, typ)}
		}
		if _, dup := props[name]; dup {
			return nil, usageError{fmt.Errorf("--param: %q is given twice", name)}
		}
		props[name] = prop{Type: typ, Description: desc}
		if !optional {
			required = append(required, name)
		}
	}
	return json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
}

// keyValues parses K=V flag values into a map.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageError{fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv)}
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

func newToolAddHTTPCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		url, method, desc string
		headers           []string
		timeoutMS         int
		s                 schemaFlags
	)
	cmd := &cobra.Command{
		Use:   "add-http NAME --url URL",
		Short: "Register an HTTP endpoint as a tool",
		Long: `Register an HTTP endpoint as a tool. The model's arguments go in the query
string for GET and as a JSON body otherwise; the response body is the result.
Header values may reference the tenant's secrets as ${secret:NAME} (stored
with PUT /v1/secrets), so that the tool's record never holds them; results
show them redacted. The server's environment (${NAME}) is only for tools an
admin key registers, and only for variables WEFT_ENV_SECRETS_ALLOW lists.
The server refuses loopback and private addresses unless
WEFT_HTTP_TOOLS_ALLOW lists them.`,
		Example: `  weft tool add-http weather --url https://api.example.com/weather \
    --description "Current weather of a city" --param city:string:the city's name \
    --header "Authorization=Bearer \${secret:WEATHER_KEY}"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				return usageError{errors.New("no endpoint: pass --url URL")}
			}
			h, err := keyValues("header", headers)
			if err != nil {
				return err
			}
			params, err := s.parameters()
			if err != nil {
				return err
			}
			if timeoutMS < 0 {
				return usageError{errors.New("--timeout-ms: want 0 (the server's default) or more")}
			}
			return createTool(cmd, e, r, client.Tool{Name: args[0], Description: desc, Kind: client.ToolHTTP, Parameters: params,
				HTTP: &client.HTTPTool{Method: strings.ToUpper(method), URL: url, Headers: h, TimeoutMS: timeoutMS}})
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "the endpoint's URL")
	f.StringVar(&method, "method", "GET", "the HTTP method")
	f.StringArrayVar(&headers, "header", nil, "a request header as KEY=VALUE; repeat for each")
	f.StringVar(&desc, "description", "", "what the tool does, for the model")
	f.IntVar(&timeoutMS, "timeout-ms", 0, "the call's timeout in milliseconds (0: the server's default)")
	s.register(cmd)
	serverFlag(cmd, r)
	return cmd
}

func newToolAddMCPCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		url, command           string
		cmdArgs, envs, headers []string
	)
	cmd := &cobra.Command{
		Use:   "add-mcp NAME (--command CMD [--arg A ...] | --url URL)",
		Short: "Register an MCP server, whose tools become tools",
		Long: `Register a Model Context Protocol server: a command the weft server starts and
talks to over stdio, or a streamable HTTP endpoint. The server is contacted
now and its tools listed; each becomes a tool named NAME_<tool>. Run
"weft tool refresh NAME" when the server's tools change.

Only an admin key may register a --command server (it runs on the weft
server's machine). A --url server passes the same guard as HTTP tools:
loopback and private addresses are refused unless WEFT_HTTP_TOOLS_ALLOW, on the
weft server, lists them.`,
		Example: `  weft tool add-mcp everything --command npx --arg -y --arg @modelcontextprotocol/server-everything
  weft tool add-mcp docs --url https://mcp.example.com/mcp --header "Authorization=Bearer \${secret:DOCS_TOKEN}"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv := &client.MCPServer{Command: command, Args: cmdArgs, URL: url}
			switch {
			case (command == "") == (url == ""):
				return usageError{errors.New("give the server as either --command CMD (stdio) or --url URL (HTTP)")}
			case url != "" && (len(cmdArgs) > 0 || len(envs) > 0):
				return usageError{errors.New("--arg and --env apply to --command, not --url")}
			case command != "" && len(headers) > 0:
				return usageError{errors.New("--header applies to --url, not --command")}
			case command != "":
				srv.Transport = "stdio"
			default:
				srv.Transport = "http"
			}
			var err error
			if srv.Env, err = keyValues("env", envs); err != nil {
				return err
			}
			if srv.Headers, err = keyValues("header", headers); err != nil {
				return err
			}
			return createTool(cmd, e, r, client.Tool{Name: args[0], Kind: client.ToolMCP, MCP: srv})
		},
	}
	f := cmd.Flags()
	f.StringVar(&command, "command", "", "the command that runs the server (stdio transport)")
	f.StringArrayVar(&cmdArgs, "arg", nil, "an argument of the command; repeat for each")
	f.StringArrayVar(&envs, "env", nil, "an environment variable of the command as KEY=VALUE; repeat for each")
	f.StringVar(&url, "url", "", "the server's streamable HTTP endpoint")
	f.StringArrayVar(&headers, "header", nil, "an HTTP header as KEY=VALUE (values may use ${secret:NAME}); repeat for each")
	serverFlag(cmd, r)
	return cmd
}

func newToolAddSQLCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		driver, dsnEnv, query, desc string
		bind                        []string
		s                           schemaFlags
	)
	cmd := &cobra.Command{
		Use:   "add-sql NAME --driver postgres|sqlite --dsn-env VAR --query Q",
		Short: "Register a read-only SQL query as a tool",
		Long: `Register one read-only SQL query as a tool. Its placeholders ($1, $2, … or ?)
take the arguments named by --bind, in order; they are bound, never spliced
into the text. The connection string is read from the weft server's
environment variable --dsn-env (which must be set where the server runs), and
never stored; only an admin key may register SQL tools. Rows come back as JSON. Without --param or --parameters, each
bound name is a required parameter of any type.`,
		Example: `  weft tool add-sql order_status --driver postgres --dsn-env ORDERS_DSN \
    --query "SELECT status, updated_at FROM orders WHERE id = $1" \
    --bind order_id --param "order_id:integer:the order's number" \
    --description "Status of an order"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case driver != "postgres" && driver != "sqlite":
				return usageError{fmt.Errorf("--driver %q: want postgres or sqlite", driver)}
			case dsnEnv == "":
				return usageError{errors.New("no connection: pass --dsn-env VAR, the server's environment variable holding the DSN")}
			case strings.TrimSpace(query) == "":
				return usageError{errors.New("no query: pass --query Q")}
			}
			params, err := s.parameters()
			if err != nil {
				return err
			}
			return createTool(cmd, e, r, client.Tool{Name: args[0], Description: desc, Kind: client.ToolSQL, Parameters: params,
				SQL: &client.SQLTool{Driver: driver, DSNEnv: dsnEnv, Query: query, Bind: bind}})
		},
	}
	f := cmd.Flags()
	f.StringVar(&driver, "driver", "", "postgres or sqlite")
	f.StringVar(&dsnEnv, "dsn-env", "", "the server's environment variable that holds the connection string")
	f.StringVar(&query, "query", "", "the read-only query")
	f.StringArrayVar(&bind, "bind", nil, "the argument a placeholder takes, in order; repeat for each")
	f.StringVar(&desc, "description", "", "what the tool does, for the model")
	s.register(cmd)
	return cmd
}

// createTool registers t and reports it; an MCP server's report lists the
// tools it brought.
func createTool(cmd *cobra.Command, e *env, r *remoteFlags, t client.Tool) error {
	c, err := r.client(e)
	if err != nil {
		return err
	}
	got, err := c.CreateTool(cmd.Context(), t)
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, remoteError(err, c))
	}
	var children []client.Tool
	if got.Kind == client.ToolMCP {
		all, err := c.ListTools(cmd.Context())
		if err != nil {
			return remoteError(err, c)
		}
		children = childrenOf(all, got.ID)
	}
	if r.json {
		return printJSON(e, append([]client.Tool{got}, children...))
	}
	if got.Kind != client.ToolMCP {
		fmt.Fprintf(e.stdout, "tool %s created (%s)\n", got.Name, got.ID)
		return nil
	}
	fmt.Fprintf(e.stdout, "MCP server %s registered (%s) with %s\n", got.Name, got.ID, plural(len(children), "tool"))
	return printTools(e, children)
}

func childrenOf(all []client.Tool, parent string) []client.Tool {
	var out []client.Tool
	for _, t := range all {
		if t.ParentID == parent {
			out = append(out, t)
		}
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// printTools writes tools as a table.
func printTools(e *env, tools []client.Tool) error {
	if len(tools) == 0 {
		return nil
	}
	names := map[string]string{}
	for _, t := range tools {
		names[t.ID] = t.Name
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tKIND\tTARGET\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.ID, t.Kind, target(t, names), orDash(firstLine(t.Description, 60), "-"))
	}
	return tw.Flush()
}

// target says what a tool calls.
func target(t client.Tool, names map[string]string) string {
	switch {
	case t.HTTP != nil:
		return t.HTTP.Method + " " + t.HTTP.URL
	case t.MCP != nil && t.MCP.URL != "":
		return t.MCP.URL
	case t.MCP != nil:
		return strings.Join(append([]string{t.MCP.Command}, t.MCP.Args...), " ")
	case t.SQL != nil:
		return t.SQL.Driver + " $" + t.SQL.DSNEnv
	case t.ParentID != "":
		return "MCP server " + orDash(names[t.ParentID], t.ParentID)
	}
	return "-"
}

// firstLine returns the first line of s, cut to at most n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newToolListCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tools, MCP servers' tools included",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			tools, err := c.ListTools(cmd.Context())
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if tools == nil {
					tools = []client.Tool{}
				}
				return printJSON(e, tools)
			}
			if len(tools) == 0 {
				fmt.Fprintln(e.stdout, `no tools (register one with "weft tool add-http", "add-mcp" or "add-sql")`)
				return nil
			}
			return printTools(e, tools)
		},
	}
}

func newToolShowCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show TOOL",
		Short: "Show a tool's definition and parameters",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			t, err := c.FindTool(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				return printJSON(e, t)
			}
			names := map[string]string{}
			if t.ParentID != "" {
				if p, err := c.GetTool(cmd.Context(), t.ParentID); err == nil {
					names[p.ID] = p.Name
				}
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
			row("name", t.Name)
			row("id", t.ID)
			row("kind", t.Kind)
			row("target", target(t, names))
			row("description", orDash(strings.Join(strings.Fields(t.Description), " "), "-"))
			if t.SQL != nil {
				row("query", t.SQL.Query)
				row("bind", list(t.SQL.Bind))
			}
			row("created", when(t.CreatedAt))
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(t.Parameters) > 0 {
				fmt.Fprintln(e.stdout, "parameters:")
				b, err := json.MarshalIndent(t.Parameters, "  ", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, "  "+string(b))
			}
			return nil
		},
	}
}

func newToolTryCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "try TOOL [ARGUMENTS]",
		Aliases: []string{"invoke"},
		Short:   "Run a tool with JSON arguments, as an agent's turn would",
		Long: `Run a tool on the server with ARGUMENTS, a JSON object ({} when absent), through
the path an agent's turn uses: the outbound guard, the tenant's secrets
(redacted from the answer), the tool's timeout and the result cap. The
result goes to stdout; a failed call prints the error a model would be given
and exits 1.`,
		Example: `  weft tool try weather '{"city":"Paris"}'`,
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var arguments json.RawMessage
			if len(args) == 2 {
				arguments = json.RawMessage(strings.TrimSpace(args[1]))
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(arguments, &obj); err != nil || obj == nil {
					return usageError{fmt.Errorf("ARGUMENTS must be a JSON object, like '{\"city\":\"Paris\"}'")}
				}
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			t, err := c.FindTool(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err, c)
			}
			res, err := c.InvokeTool(cmd.Context(), t.ID, arguments)
			if err != nil {
				return fmt.Errorf("tool %q: %w", t.Name, remoteError(err, c))
			}
			if r.json {
				if err := printJSON(e, res); err != nil {
					return err
				}
			} else if res.OK {
				fmt.Fprintln(e.stdout, res.Result)
			}
			if !res.OK {
				return fmt.Errorf("tool %q failed: %s", t.Name, strings.TrimPrefix(res.Error, "Error: "))
			}
			return nil
		},
	}
}

func newToolRmCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm TOOL...",
		Aliases: []string{"delete"},
		Short:   "Remove tools (an MCP server with its tools)",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			var removed []string
			for _, ref := range args {
				t, err := c.FindTool(cmd.Context(), ref)
				if err != nil {
					return remoteError(err, c)
				}
				if err := c.DeleteTool(cmd.Context(), t.ID); err != nil {
					return remoteError(err, c)
				}
				removed = append(removed, t.ID)
				if !r.json {
					what := "tool"
					if t.Kind == client.ToolMCP {
						what = "MCP server"
					}
					fmt.Fprintf(e.stdout, "%s %s removed (%s)\n", what, t.Name, t.ID)
				}
			}
			if r.json {
				return printJSON(e, map[string]any{"removed": removed})
			}
			return nil
		},
	}
}

func newToolRefreshCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "refresh TOOL",
		Short: "List an MCP server's tools again: register new ones, remove those gone",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			t, err := c.FindTool(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err, c)
			}
			before, err := c.ListTools(cmd.Context())
			if err != nil {
				return remoteError(err, c)
			}
			had := map[string]string{} // id → name
			for _, x := range childrenOf(before, t.ID) {
				had[x.ID] = x.Name
			}
			all, err := c.RefreshTool(cmd.Context(), t.ID)
			if err != nil {
				return fmt.Errorf("tool %q: %w", t.Name, remoteError(err, c))
			}
			children := childrenOf(all, t.ID)
			if r.json {
				return printJSON(e, append([]client.Tool{t}, children...))
			}
			var added, gone []string
			for _, x := range children {
				if _, ok := had[x.ID]; !ok {
					added = append(added, x.Name)
				}
				delete(had, x.ID)
			}
			for _, name := range had {
				gone = append(gone, name)
			}
			slices.Sort(gone)
			fmt.Fprintf(e.stdout, "MCP server %s refreshed: %s", t.Name, plural(len(children), "tool"))
			for _, d := range []struct {
				what  string
				names []string
			}{{"new", added}, {"removed", gone}} {
				if len(d.names) > 0 {
					fmt.Fprintf(e.stdout, "; %d %s (%s)", len(d.names), d.what, strings.Join(d.names, ", "))
				}
			}
			fmt.Fprintln(e.stdout)
			return printTools(e, children)
		},
	}
}
