package main

import (
	"slices"
	"strings"

	"github.com/weftlabs/weft/provider"
)

// demoModel is the model used when nothing is configured.
const demoModel = "scripted/demo"

// preferred orders the providers tried for a default model; the rest follow
// in name order.
var preferred = []string{"openai", "anthropic"}

// defaultModel picks the model a command uses when --model is not given:
// WEFT_DEFAULT_MODEL (or the deprecated WEFT_MODEL) if set, else the first configured real provider (its default
// model), else the offline demo model. note, when not empty, tells the user
// how to configure a real provider.
func defaultModel(getenv func(string) string) (spec, note string) {
	if m, warning := envModel(getenv); m != "" {
		return m, warning
	}
	names := provider.Names()
	order := slices.DeleteFunc(slices.Clone(preferred), func(n string) bool { return !slices.Contains(names, n) })
	for _, n := range names {
		if !slices.Contains(order, n) && n != "scripted" {
			order = append(order, n)
		}
	}
	var envs []string
	for _, name := range order {
		st, err := provider.StatusOf(name, getenv)
		if err != nil {
			continue
		}
		if st.Configured {
			return name, ""
		}
		if p, ok := provider.Lookup(name); ok && len(p.Env) > 0 {
			envs = append(envs, p.Env[0])
		}
	}
	hint := "pass --model provider/model or set " + defaultModelEnv
	if len(envs) > 0 {
		hint = "set " + strings.Join(envs[:min(len(envs), 2)], " or ") + " (others: \"weft models\"), or " + hint
	}
	return demoModel, "no model provider is configured, so the offline demo model " + demoModel + " answers; " + hint
}

// defaultModelEnv names the default model, for every command and for weft
// serve; deprecatedModelEnv is its former name in the CLI, still read.
const (
	defaultModelEnv    = "WEFT_DEFAULT_MODEL"
	deprecatedModelEnv = "WEFT_MODEL"
)

// envModel returns the model the environment names (WEFT_DEFAULT_MODEL,
// else WEFT_MODEL), with a deprecation warning when it came from
// WEFT_MODEL.
func envModel(getenv func(string) string) (spec, warning string) {
	if m := strings.TrimSpace(getenv(defaultModelEnv)); m != "" {
		return m, ""
	}
	if m := strings.TrimSpace(getenv(deprecatedModelEnv)); m != "" {
		return m, deprecatedModelEnv + " is deprecated: set " + defaultModelEnv + " instead (the same variable weft serve reads)"
	}
	return "", ""
}
