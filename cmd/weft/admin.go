package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
)

func newAdminCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Operate on a Weft server's stores offline",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newResetKeyCmd(e))
	return cmd
}

func newResetKeyCmd(e *env) *cobra.Command {
	var data, postgres string
	cmd := &cobra.Command{
		Use:   "reset-key",
		Short: "Revoke the admin key and make a new one (recovers a lost key)",
		Long: `Recover a lost admin key offline: revoke the admin key of tenant "default"
and make a new one, printed once on stdout (only its hash is stored) and
written to <data>/admin.key (mode 0600). Other tenants' keys stay valid.

It works on the store weft serve uses: the embedded one under --data, or the
PostgreSQL metadata store of --postgres (default $WEFT_POSTGRES_URL). A server
still running on PostgreSQL stops accepting the old key within 30 s.

A server started with WEFT_ADMIN_KEY makes that key the admin key again at
its next start: to recover such a server, set a new WEFT_ADMIN_KEY instead.`,
		Example: `  weft admin reset-key --data /var/lib/weft
  weft admin reset-key --postgres postgres://weft@db/weft`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			f := cmd.Flags()
			if !f.Changed("postgres") {
				postgres = e.getenv("WEFT_POSTGRES_URL")
			}
			var store meta.Store
			var err error
			if postgres != "" {
				store, err = meta.OpenPostgres(ctx, postgres)
			} else {
				path := filepath.Join(data, "weft.db")
				if _, serr := os.Stat(path); serr != nil {
					return fmt.Errorf("reset-key: no Weft store at %s (is --data right?): %w", path, serr)
				}
				store, err = meta.OpenSQLite(ctx, path)
			}
			if err != nil {
				return fmt.Errorf("reset-key: %w", err)
			}
			defer store.Close()
			clear, id, revoked, err := platform.ResetAdminKey(ctx, store)
			if err != nil {
				return fmt.Errorf("reset-key: %w", err)
			}
			fmt.Fprintln(e.stdout, clear)
			msg := "weft: made admin key " + id
			if len(revoked) > 0 {
				msg += "; revoked " + strings.Join(revoked, ", ")
			}
			if postgres == "" || f.Changed("data") {
				path := filepath.Join(data, "admin.key")
				if err := os.WriteFile(path, []byte(clear+"\n"), 0o600); err != nil {
					return fmt.Errorf("reset-key: the new key is above, but %w", err)
				}
				// WriteFile keeps the mode of an existing file.
				if err := os.Chmod(path, 0o600); err != nil {
					return fmt.Errorf("reset-key: %w", err)
				}
				msg += "; written to " + path
			}
			fmt.Fprintln(e.stderr, msg)
			if e.getenv("WEFT_ADMIN_KEY") != "" {
				fmt.Fprintln(e.stderr, "weft: WEFT_ADMIN_KEY is set here: a server started with it makes it the admin key again")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "weft-data", "data directory of weft serve (its embedded store, and where admin.key goes)")
	f.StringVar(&postgres, "postgres", "", "PostgreSQL DSN of the metadata store (default $WEFT_POSTGRES_URL)")
	return cmd
}
