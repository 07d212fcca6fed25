package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

// maxWorkflowFile bounds a definition file read by weft workflow apply, as
// the server bounds a definition (1 MiB).
const maxWorkflowFile = 1 << 20

func newWorkflowCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"wf"},
		Short:   "Save, list and run the workflows of a running weft server",
		Long: `Save workflow definitions (JSON or YAML; checked by the server when saved), list
them, run them, list their runs and answer the runs that wait for a person
(/v1/workflows).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newWorkflowApplyCmd(e, &r), newWorkflowListCmd(e, &r), newWorkflowRunCmd(e, &r), newWorkflowRunsCmd(e, &r), newWorkflowResumeCmd(e, &r))
	return cmd
}

func newWorkflowApplyCmd(e *env, r *remoteFlags) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE...",
		Short: "Save workflow definitions: a new workflow, or a new version of the one of that name",
		Long: `Save each definition file (JSON or YAML; "-" reads stdin) as a new workflow, or as
a new version of the workflow of the same name. The server checks a definition
before saving it; a fault names the node and field.`,
		Example: `  weft workflow apply -f examples/workflows/triage.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError{fmt.Errorf("name a definition file with -f")}
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			var out []client.Workflow
			for _, f := range files {
				def, err := readDefinitionFile(e, f)
				if err != nil {
					return err
				}
				w, created, err := c.ApplyWorkflow(cmd.Context(), def)
				if err != nil {
					return fmt.Errorf("%s: %w", f, remoteError(err, c))
				}
				out = append(out, w)
				if !r.json {
					action := "updated"
					if created {
						action = "created"
					}
					fmt.Fprintf(e.stdout, "workflow %s %s (%s, version %d)\n", w.Name, action, w.ID, w.Version)
				}
			}
			if r.json {
				return printJSON(e, out)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a definition file (JSON or YAML; - for stdin); repeatable")
	return cmd
}

// readDefinitionFile reads a definition file, or stdin for "-", within
// maxWorkflowFile.
func readDefinitionFile(e *env, name string) ([]byte, error) {
	var rd io.Reader
	if name == "-" {
		rd = e.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rd = f
	}
	b, err := io.ReadAll(io.LimitReader(rd, maxWorkflowFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxWorkflowFile {
		return nil, fmt.Errorf("%s: over the limit of %d bytes", name, maxWorkflowFile)
	}
	return b, nil
}

func newWorkflowListCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenant's workflows",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			list, err := c.ListWorkflows(cmd.Context())
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				raws := make([]json.RawMessage, 0, len(list))
				for _, w := range list {
					raws = append(raws, w.Raw)
				}
				return printJSON(e, raws)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tVERSION\tUPDATED")
			for _, w := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", w.ID, w.Name, w.Version, when(w.UpdatedAt))
			}
			return tw.Flush()
		},
	}
}

func newWorkflowRunCmd(e *env, r *remoteFlags) *cobra.Command {
	var pairs []string
	var inputsJSON string
	cmd := &cobra.Command{
		Use:   "run WORKFLOW [--input NAME=VALUE...] [--inputs JSON]",
		Short: "Run a workflow (by name or id) and print its outputs",
		Long: `Run a workflow and wait for the run to end. Inputs are given as NAME=VALUE (a
VALUE that is valid JSON is taken as JSON, else as a string) or all at once as a
JSON object with --inputs. The outputs are printed as JSON; a failed or
cancelled run exits non-zero with its error.`,
		Example: `  weft workflow run triage --input ticket="My order never arrived"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			inputs := map[string]any{}
			if inputsJSON != "" {
				if err := json.Unmarshal([]byte(inputsJSON), &inputs); err != nil {
					return usageError{fmt.Errorf("--inputs: want a JSON object: %w", err)}
				}
			}
			for _, p := range pairs {
				name, val, ok := strings.Cut(p, "=")
				if !ok || name == "" {
					return usageError{fmt.Errorf("--input %q: want NAME=VALUE", p)}
				}
				var v any
				if json.Unmarshal([]byte(val), &v) != nil {
					v = val
				}
				inputs[name] = v
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			run, err := c.RunWorkflow(cmd.Context(), args[0], inputs)
			if err != nil {
				return remoteError(err, c)
			}
			return printRun(e, r, run)
		},
	}
	cmd.Flags().StringArrayVar(&pairs, "input", nil, "an input as NAME=VALUE; repeatable")
	cmd.Flags().StringVar(&inputsJSON, "inputs", "", "the inputs as one JSON object")
	return cmd
}

func newWorkflowRunsCmd(e *env, r *remoteFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs WORKFLOW",
		Short: "List a workflow's runs, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			runs, err := c.ListWorkflowRuns(cmd.Context(), args[0], limit)
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if runs == nil {
					runs = []client.WorkflowRun{}
				}
				return printJSON(e, runs)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tSTATUS\tCREATED\tERROR")
			for _, run := range runs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", run.ID, run.Version, run.Status, when(run.CreatedAt), run.Error)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (default the server's, 50)")
	return cmd
}

// printRun prints a run that stopped: its outputs, or what it waits for
// and how to answer; a failed or cancelled run is an error.
func printRun(e *env, r *remoteFlags, run client.WorkflowRun) error {
	if r.json {
		return printJSON(e, run)
	}
	switch run.Status {
	case "succeeded":
		return printJSON(e, run.Outputs)
	case "waiting":
		fmt.Fprintf(e.stdout, "run %s is waiting for a person:\n", run.ID)
		for _, in := range run.Interrupts {
			fmt.Fprintf(e.stdout, "  %s: %s\n", in.ID, in.Message)
			if len(in.OutputSchema) > 0 {
				fmt.Fprintf(e.stdout, "    answer: %s\n", in.OutputSchema)
			}
			if in.ExpiresAt != nil {
				fmt.Fprintf(e.stdout, "    expires: %s\n", when(*in.ExpiresAt))
			}
			fmt.Fprintf(e.stdout, "    weft workflow resume %s %s --answer '{...}'\n", run.ID, strings.TrimPrefix(in.ID, run.ID+":"))
		}
		return nil
	}
	return fmt.Errorf("run %s %s: %s", run.ID, run.Status, run.Error)
}

func newWorkflowResumeCmd(e *env, r *remoteFlags) *cobra.Command {
	var answerJSON, workflow string
	cmd := &cobra.Command{
		Use:   "resume RUN INTERRUPT --answer JSON",
		Short: "Answer a waiting run's question and resume the run",
		Long: `Answer the question a waiting run asks (a human node, or a Go node's pause) and
resume the run; print its outputs, or what it waits for next. INTERRUPT is the
interrupt's id (RUN:NODE) or the node's key. The answer is a JSON object that
must fit the question's schema: a refused answer names the field and leaves the
run waiting. The run's workflow is found among the tenant's open questions
unless --workflow names it.`,
		Example: `  weft workflow resume run_2x9 approve --answer '{"ok": true, "note": "within budget"}'`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			runID, id := args[0], args[1]
			if !strings.HasPrefix(id, runID+":") {
				id = runID + ":" + id
			}
			answer := map[string]any{}
			if answerJSON != "" {
				if err := json.Unmarshal([]byte(answerJSON), &answer); err != nil || answer == nil {
					return usageError{fmt.Errorf("--answer: want a JSON object: %v", err)}
				}
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			if workflow == "" {
				open, err := c.ListInterrupts(cmd.Context(), "workflow", 500)
				if err != nil {
					return remoteError(err, c)
				}
				for _, in := range open {
					if in.RunID == runID {
						workflow = in.WorkflowID
						break
					}
				}
				if workflow == "" {
					return fmt.Errorf("run %s waits for no answer (answered, expired, finished, or unknown); --workflow asks the server about it", runID)
				}
			}
			run, err := c.ResumeInterrupt(cmd.Context(), workflow, runID, id, answer)
			var ce *client.Error
			if errors.As(err, &ce) && len(ce.Answer) > 0 {
				return fmt.Errorf("%s: %s", ce.Message, ce.Answer)
			}
			if err != nil {
				return remoteError(err, c)
			}
			return printRun(e, r, run)
		},
	}
	cmd.Flags().StringVar(&answerJSON, "answer", "", "the answer as a JSON object")
	cmd.Flags().StringVar(&workflow, "workflow", "", "the run's workflow (name or id); found from the open questions when absent")
	return cmd
}
