package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

func TestKeyCreateListRevoke(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	ctx := t.Context()

	// create prints the clear key alone on stdout; it works at once.
	r := runCLI(t, ctx, p.vars(), "", "key", "create", "ci")
	clear := strings.TrimSpace(r.stdout)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "not shown again") {
		t.Fatalf("create: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := client.New(p.url, clear).ListAgents(ctx); err != nil {
		t.Fatalf("the new key does not work: %v", err)
	}
	r = runCLI(t, ctx, p.vars(), "", "key", "create", "acme-app", "--tenant", "acme", "--json")
	var acme client.APIKey
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &acme) != nil || acme.Tenant != "acme" || acme.Key == "" {
		t.Fatalf("create --tenant --json: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	// list: the tenant's keys, never a secret.
	r = runCLI(t, ctx, p.vars(), "", "key", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "ci") || !strings.Contains(r.stdout, "admin") || strings.Contains(r.stdout, "acme-app") || strings.Contains(r.stdout, clear) {
		t.Fatalf("list: code %d stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, ctx, p.vars(), "", "key", "list", "--tenant", "acme", "--json")
	var keys []client.APIKey
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &keys) != nil || len(keys) != 1 || keys[0].ID != acme.ID || keys[0].Key != "" {
		t.Fatalf("list --tenant: code %d stdout %q", r.code, r.stdout)
	}

	// revoke by name (own tenant) and by id (another tenant's key).
	if r := runCLI(t, ctx, p.vars(), "", "key", "revoke", "ci"); r.code != 0 || !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("revoke by name: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "key", "revoke", acme.ID); r.code != 0 {
		t.Fatalf("revoke by id: code %d stderr %q", r.code, r.stderr)
	}
	if _, err := client.New(p.url, clear).ListAgents(ctx); err == nil {
		t.Fatal("a revoked key still works")
	}

	// The admin key cannot be revoked; a tenant key below owner cannot
	// manage keys.
	if r := runCLI(t, ctx, p.vars(), "", "key", "revoke", "admin"); r.code != exitFailure || !strings.Contains(r.stderr, "admin key") {
		t.Fatalf("revoke admin: code %d stderr %q", r.code, r.stderr)
	}
	k, err := p.c.CreateKey(ctx, "reader", "")
	if err != nil {
		t.Fatal(err)
	}
	vars := p.vars()
	vars["WEFT_API_KEY"] = k.Key
	if r := runCLI(t, ctx, vars, "", "key", "create", "more"); r.code != exitFailure || !strings.Contains(r.stderr, "needs the owner role") {
		t.Fatalf("create with a tenant key: code %d stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, ctx, p.vars(), "", "key", "revoke", "nobody"); r.code != exitFailure || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("revoke unknown: code %d stderr %q", r.code, r.stderr)
	}
}
