package platform

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/weftlabs/weft/internal/redact"
	"github.com/weftlabs/weft/platform/config"
	"github.com/weftlabs/weft/platform/secrets"
	"github.com/weftlabs/weft/provider"
)

// processSecrets are the secret values this process holds — the API keys
// of the model providers (from the environment or the configuration file),
// the admin key, the key tenant secrets are encrypted under, the variables
// WEFT_ENV_SECRETS_ALLOW lets tools read — and the redactor that removes
// them, bearer tokens and credential headers from everything that leaves
// the process: the message of every API error (errorf: the JSON answers,
// SSE error frames, OpenAI-style errors, MCP and A2A errors are all made
// from it), workflow run errors, traces and every log line (New and Run
// wrap the logger). It is one set for the process rather than one per
// Server because what it holds is the process's own: its environment and
// its configuration; values are only ever added, by New and Run.
//
// Tenant secrets are not in it: they are removed where they are resolved,
// per call (tool/secretref), so that one tenant's values never change what
// another tenant reads.
var processSecrets redact.Secrets

// addEnvSecrets records the secrets getenv holds: every provider's
// *_KEY variable, WEFT_ADMIN_KEY, WEFT_SECRET_KEY and the variables
// WEFT_ENV_SECRETS_ALLOW lists.
func addEnvSecrets(getenv func(string) string) {
	vals := []string{getenv(adminKeyEnv), getenv(secrets.KeyEnv)}
	for _, name := range provider.Names() {
		p, _ := provider.Lookup(name)
		for _, env := range p.Env {
			if strings.HasSuffix(env, "_KEY") {
				vals = append(vals, getenv(env))
			}
		}
	}
	for _, name := range strings.Split(getenv(EnvSecretsAllowEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			vals = append(vals, getenv(name))
		}
	}
	processSecrets.Add(vals...)
}

// addKeySecret records the key tenant secrets are encrypted under, in the
// encodings it is written in (WEFT_SECRET_KEY, the data directory's file).
func addKeySecret(key []byte) {
	if len(key) > 0 {
		processSecrets.Add(base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), hex.EncodeToString(key))
	}
}

// addConfigSecrets records the values a configuration file gives: its
// providers' API keys and its secrets, references expanded (a reference
// that does not expand is left to the code that applies the file to
// report).
func addConfigSecrets(f *config.File, env config.Env) {
	if f == nil {
		return
	}
	if ps, err := f.ResolvedProviders(env); err == nil {
		for _, p := range ps {
			processSecrets.Add(p.APIKey)
		}
	}
	for _, v := range f.Secrets {
		if x, err := env.Expand(v); err == nil {
			processSecrets.Add(x)
		}
	}
}

// adminKeyEnv is the variable weft serve reads the admin key from.
const adminKeyEnv = "WEFT_ADMIN_KEY"
