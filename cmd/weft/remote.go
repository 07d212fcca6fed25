package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

// defaultURL is where weft serve listens by default.
const defaultURL = "http://127.0.0.1:8080"

// adminKeyFile is where weft serve writes the generated admin key, relative
// to the directory it was started in (its default --data).
const adminKeyFile = "weft-data/admin.key"

// remoteFlags are the flags of the commands that talk to a running server.
type remoteFlags struct {
	url, key string
	json     bool
}

func (r *remoteFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&r.url, "url", "", "URL of the weft server (default $WEFT_URL, else "+defaultURL+")")
	f.StringVar(&r.key, "key", "", "API key (default $WEFT_API_KEY, else ./"+adminKeyFile+" when it exists)")
}

func (r *remoteFlags) registerJSON(cmd *cobra.Command) {
	cmd.PersistentFlags().BoolVar(&r.json, "json", false, "print JSON, for scripts")
}

// client returns a client of the server the flags and environment name.
// With no key given, it uses the admin key a local weft serve wrote, and
// says so on stderr.
func (r *remoteFlags) client(e *env) (*client.Client, error) {
	url, key, err := r.resolve(e)
	if err != nil {
		return nil, err
	}
	return client.New(url, key, client.WithUserAgent("weft-cli")), nil
}

// resolve returns the server's URL and the API key the flags and
// environment name.
func (r *remoteFlags) resolve(e *env) (url, key string, err error) {
	url = firstNonEmpty(r.url, e.getenv("WEFT_URL"), defaultURL)
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	key = firstNonEmpty(r.key, e.getenv("WEFT_API_KEY"))
	if key == "" {
		b, err := os.ReadFile(adminKeyFile)
		switch {
		case err == nil:
			key = strings.TrimSpace(string(b))
			fmt.Fprintf(e.stderr, "weft: using the admin key in ./%s (set WEFT_API_KEY or pass --key to use another)\n", adminKeyFile)
		case errors.Is(err, os.ErrNotExist):
			return "", "", usageError{fmt.Errorf("no API key: pass --key or set WEFT_API_KEY (weft serve writes the admin key to ./%s on first start)", adminKeyFile)}
		default:
			return "", "", fmt.Errorf("reading the admin key: %w", err)
		}
	}
	return url, key, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// remoteError makes a client error read well on one line, with what to do
// about it.
func remoteError(err error, c *client.Client) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		switch ce.Code {
		case client.CodeUnauthorized:
			return fmt.Errorf("%s: %s — check --key or WEFT_API_KEY", c.BaseURL(), ce.Message)
		case client.CodeRateLimited:
			return fmt.Errorf("%s — wait a moment and retry", ce.Message)
		}
		if ce.Message != "" {
			return errors.New(ce.Message)
		}
		return ce
	}
	if errors.Is(err, client.ErrStreamEnded) {
		return fmt.Errorf("the connection to %s broke off in the middle of the answer; what the server saved before that is kept (see \"weft session show\")", c.BaseURL())
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return fmt.Errorf("cannot reach a weft server at %s (%v) — start one with \"weft serve\", or pass --url / set WEFT_URL", c.BaseURL(), oe.Err)
	}
	return err
}

// printJSON writes v as indented JSON.
func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
