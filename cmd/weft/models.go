package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/provider"
)

// providerInfo is one row of "weft models".
type providerInfo struct {
	Name         string   `json:"name"`
	Configured   bool     `json:"configured"`
	Detail       string   `json:"detail"`
	DefaultModel string   `json:"default_model"`
	Env          []string `json:"env"`
	Description  string   `json:"description"`
}

func newModelsCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the model providers, whether each is configured, and the variables it reads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			infos := providerInfos(e.getenv)
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(infos)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROVIDER\tCONFIGURED\tDEFAULT MODEL\tSTATUS\tENVIRONMENT")
			for _, p := range infos {
				yes := "no"
				if p.Configured {
					yes = "yes"
				}
				env := strings.Join(p.Env, ", ")
				if env == "" {
					env = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, yes, p.DefaultModel, p.Detail, env)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			spec, _ := defaultModel(e.getenv)
			fmt.Fprintf(e.stdout, "\nDefault model: %s (set WEFT_DEFAULT_MODEL or pass --model to change it)\n", spec)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func providerInfos(getenv func(string) string) []providerInfo {
	var out []providerInfo
	for _, name := range provider.Names() {
		p, _ := provider.Lookup(name)
		st, _ := provider.StatusOf(name, getenv)
		env := p.Env
		if env == nil {
			env = []string{}
		}
		out = append(out, providerInfo{
			Name: name, Configured: st.Configured, Detail: st.Detail,
			DefaultModel: p.DefaultModel, Env: env, Description: p.Description,
		})
	}
	return out
}
