package secrets_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/secrets"
)

func TestBox(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, secrets.KeySize)
	b, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal("t1", "tok", []byte("value-123"))
	if bytes.Contains(sealed, []byte("value-123")) {
		t.Fatal("the sealed value holds the clear value")
	}
	if v, err := b.Open("t1", "tok", sealed); err != nil || string(v) != "value-123" {
		t.Fatalf("Open = %q, %v", v, err)
	}
	// Bound to tenant and name: a row moved elsewhere does not open.
	for _, c := range [][2]string{{"t2", "tok"}, {"t1", "other"}} {
		if _, err := b.Open(c[0], c[1], sealed); err == nil {
			t.Errorf("Open(%s, %s) of another secret's value succeeded", c[0], c[1])
		}
	}
	other, _ := secrets.NewBox(bytes.Repeat([]byte{8}, secrets.KeySize))
	if _, err := other.Open("t1", "tok", sealed); !errors.Is(err, secrets.ErrWrongKey) {
		t.Errorf("Open under another key: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open("t1", "tok", sealed); err == nil {
		t.Error("a tampered value opened")
	}
	if _, err := secrets.NewBox([]byte("short")); err == nil {
		t.Error("NewBox accepted a short key")
	}
}

func TestLoadKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1, created, err := secrets.LoadKey("", dir)
	if err != nil || !created || len(k1) != secrets.KeySize {
		t.Fatalf("first LoadKey = %d bytes, %v, %v", len(k1), created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, secrets.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	k2, created, err := secrets.LoadKey("", dir)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second LoadKey: created %v, same %v, %v", created, bytes.Equal(k1, k2), err)
	}
	env := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	k3, _, err := secrets.LoadKey(env, dir)
	if err != nil || !bytes.Equal(k3, bytes.Repeat([]byte{1}, 32)) {
		t.Fatalf("LoadKey from env = %v", err)
	}
	if _, err := secrets.ParseKey(strings.Repeat("ab", 32)); err != nil {
		t.Errorf("hex key: %v", err)
	}
	for _, bad := range []string{"too short", base64.StdEncoding.EncodeToString([]byte("sixteen bytes..."))} {
		if _, _, err := secrets.LoadKey(bad, dir); err == nil || !strings.Contains(err.Error(), secrets.KeyEnv) {
			t.Errorf("LoadKey(%q) = %v", bad, err)
		}
	}
}

func TestCheckValue(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "short", "has\nnewline", "nul\x00inside", strings.Repeat("x", secrets.MaxValueBytes+1)} {
		if secrets.CheckValue(bad) == nil {
			t.Errorf("CheckValue(%.20q) accepted", bad)
		}
	}
	if err := secrets.CheckValue("sk-0123456789"); err != nil {
		t.Error(err)
	}
}
