package main

import (
	"errors"
	"fmt"
	"net/http"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/config"
)

func newApplyCmd(e *env) *cobra.Command {
	var r remoteFlags
	var path string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR",
		Short: "Create or update secrets, knowledge bases, tools and agents, by name, from YAML files",
		Long: `Make a running weft server's objects match declarations: the secrets, knowledge
bases, tools and agents (and workflows) of a YAML or JSON file, or of every
.yaml, .yml and .json file of a directory ("-" reads stdin). Objects refer to
each other by name. Each object is created when absent, updated when a declared
field differs, and otherwise left alone, so applying twice changes nothing;
the report says which. Objects the files do not declare are left alone.

Secret values and provider settings may read ${NAME} (the environment) or
${file:PATH}; ${secret:NAME} in a tool header is passed as written (the
server resolves it). default_model, providers and models are settings of the
server: weft serve --config reads them, weft apply ignores them (and says so).

A file that is a single agent (as for "weft agent apply") works too.`,
		Example: `  weft apply -f weft.yaml
  weft apply -f deploy/weft/ --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return usageError{errors.New("no file: pass -f FILE or -f DIR (or -f - for stdin)")}
			}
			f, err := config.Load(path, e.stdin)
			if err != nil {
				return err
			}
			if len(f.Secrets)+len(f.KnowledgeBases)+len(f.Tools)+len(f.Agents)+len(f.Workflows) == 0 && !f.ServerSettings() {
				return fmt.Errorf("%s declares nothing (sections: secrets, knowledge_bases, tools, agents, workflows)", path)
			}
			if f.ServerSettings() {
				fmt.Fprintln(e.stderr, "weft: note: "+config.ErrServerSettings.Error()+"; weft apply leaves them out")
			}
			url, key, err := r.resolve(e)
			if err != nil {
				return err
			}
			c := client.New(url, key)
			report, err := config.Apply(cmd.Context(), config.Target{BaseURL: c.BaseURL(), Key: key, HTTP: http.DefaultClient}, f, config.Env{Getenv: e.getenv})
			if r.json {
				if report == nil {
					report = config.Report{}
				}
				if perr := printJSON(e, report); perr != nil {
					return perr
				}
			} else {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				for _, ch := range report {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ch.Kind, ch.Name, ch.Action, ch.ID, ch.Note)
				}
				tw.Flush()
				fmt.Fprintf(e.stdout, "%d created, %d updated, %d unchanged", report.Count(config.Created), report.Count(config.Updated), report.Count(config.Unchanged))
				if n := report.Count(config.Differs); n > 0 {
					fmt.Fprintf(e.stdout, ", %d differ (see the notes)", n)
				}
				fmt.Fprintln(e.stdout)
			}
			if err != nil {
				return remoteError(err, c)
			}
			return nil
		},
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.Flags().StringVarP(&path, "file", "f", "", "YAML or JSON file, or directory of them; - for stdin")
	return cmd
}
