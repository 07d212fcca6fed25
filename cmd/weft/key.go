package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

func newKeyCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Create, list and revoke the API keys of a running weft server",
		Long: `Create, list and revoke API keys (POST, GET and DELETE /v1/api-keys). Only an
admin key manages keys: pass it with --key or WEFT_API_KEY (a local weft serve
writes it to ./weft-data/admin.key). The admin key itself cannot be revoked
here: set a new WEFT_ADMIN_KEY and restart, or run "weft admin reset-key".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newKeyCreateCmd(e, &r), newKeyListCmd(e, &r), newKeyRevokeCmd(e, &r))
	return cmd
}

func newKeyCreateCmd(e *env, r *remoteFlags) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "create NAME [--tenant TENANT]",
		Short: "Create an API key; its secret is printed once",
		Long: `Create an API key named NAME, of the admin's own tenant or of --tenant (created
if new). The key is printed once on stdout, alone on its line so that scripts
can capture it: only its hash is stored.`,
		Example: `  weft key create ci
  WEFT_API_KEY=$(weft key create acme-app --tenant acme | tail -1)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimSpace(args[0])
			if name == "" {
				return usageError{fmt.Errorf("the key needs a name")}
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			k, err := c.CreateKey(cmd.Context(), name, tenant)
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				return printJSON(e, k)
			}
			fmt.Fprintf(e.stderr, "key %s created (%s) for tenant %s; store it now, it is not shown again:\n", k.Name, k.ID, k.Tenant)
			fmt.Fprintln(e.stdout, k.Key)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the key's tenant, created if new (default the admin's own)")
	return cmd
}

func newKeyListCmd(e *env, r *remoteFlags) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:     "list [--tenant TENANT]",
		Aliases: []string{"ls"},
		Short:   "List a tenant's API keys (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			keys, err := c.ListTenantKeys(cmd.Context(), tenant)
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if keys == nil {
					keys = []client.APIKey{}
				}
				return printJSON(e, keys)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tTENANT\tADMIN\tCREATED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Tenant, yesNo(k.Admin), when(k.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose keys to list (default the admin's own)")
	return cmd
}

func newKeyRevokeCmd(e *env, r *remoteFlags) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:     "revoke KEY...",
		Aliases: []string{"rm"},
		Short:   "Revoke API keys, by id or by name",
		Long: `Revoke API keys on every replica at once. KEY is a key's id (of any tenant), or
its name when exactly one key of the tenant (the admin's own, or --tenant) has
it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			// The tenant's keys, to find names; a KEY that is neither an id
			// nor a name there is taken as the id of another tenant's key.
			keys, err := c.ListTenantKeys(ctx, tenant)
			if err != nil {
				return remoteError(err, c)
			}
			var revoked []string
			for _, ref := range args {
				id := ref
				var named []string
				for _, k := range keys {
					if k.ID == ref {
						named = []string{k.ID}
						break
					}
					if k.Name == ref {
						named = append(named, k.ID)
					}
				}
				switch len(named) {
				case 0:
				case 1:
					id = named[0]
				default:
					return fmt.Errorf("%d keys are named %q (%s): revoke by id", len(named), ref, strings.Join(named, ", "))
				}
				if err := c.DeleteKey(ctx, id); err != nil {
					return remoteError(err, c)
				}
				revoked = append(revoked, id)
				if !r.json {
					fmt.Fprintf(e.stdout, "key %s revoked\n", id)
				}
			}
			if r.json {
				return printJSON(e, map[string]any{"revoked": revoked})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose key names are looked up (default the admin's own)")
	return cmd
}
