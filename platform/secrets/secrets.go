// Package secrets keeps the platform's tenant secrets: values a tenant
// stores once (API tokens for its HTTP tools, MCP servers and remote
// agents) and its configurations reference as ${secret:NAME} (package
// tool/secretref) instead of holding them.
//
// Values are write-only through the API and encrypted at rest with
// AES-256-GCM under one server key, from WEFT_SECRET_KEY ([KeyEnv]) or
// generated at first start into <data dir>/secret.key ([KeyFile], mode
// 0600). Each sealed value is bound to its tenant and name (they are the
// AEAD's additional data), so a row copied to another tenant or name does
// not decrypt. A sealed value starts with a format byte and the first four
// bytes of the key's SHA-256, so a value sealed under another key is
// reported as such instead of as corrupt.
//
// Replicas that share a PostgreSQL database must share the key: set
// WEFT_SECRET_KEY on each of them.
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// KeyEnv is the environment variable holding the server key: 32 bytes,
// base64 (standard or URL alphabet, padded or not) or hex encoded.
const KeyEnv = "WEFT_SECRET_KEY"

// KeyFile is the name of the generated key file in the data directory.
const KeyFile = "secret.key"

// KeySize is the size of the server key (AES-256).
const KeySize = 32

// Limits of names and values.
const (
	MaxValueBytes = 16 << 10
	MinValueBytes = 8
)

// ErrWrongKey reports a value sealed under another server key.
var ErrWrongKey = errors.New("the secret was encrypted under another server key; restore the original " + KeyEnv + " or " + KeyFile + ", or store the secret again")

// ParseKey decodes a key given as base64 or hex.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("%s: want %d random bytes, base64 or hex encoded (e.g. the output of `openssl rand -base64 32`)", KeyEnv, KeySize)
}

// LoadKey returns the server key: parsed from env when it is not empty,
// else read from dir/secret.key, else generated into that file (mode 0600;
// created is then true).
func LoadKey(env, dir string) (key []byte, created bool, err error) {
	if strings.TrimSpace(env) != "" {
		k, err := ParseKey(env)
		return k, false, err
	}
	path := filepath.Join(dir, KeyFile)
	if b, err := os.ReadFile(path); err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return k, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	k := make([]byte, KeySize)
	rand.Read(k)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it meanwhile: use theirs.
		return LoadKey("", dir)
	}
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", path, err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	return k, true, nil
}

// sealedVersion is the first byte of a sealed value.
const sealedVersion = 1

// Box seals and opens values under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
	id   [4]byte
}

// NewBox returns a Box over a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	b := &Box{aead: aead}
	sum := sha256.Sum256(key)
	copy(b.id[:], sum[:])
	return b, nil
}

func additional(tenant, name string) []byte {
	return []byte("weft-secret\x00" + tenant + "\x00" + name)
}

// Seal encrypts value for tenant's secret name.
func (b *Box) Seal(tenant, name string, value []byte) []byte {
	out := make([]byte, 0, 1+len(b.id)+b.aead.NonceSize()+len(value)+b.aead.Overhead())
	out = append(out, sealedVersion)
	out = append(out, b.id[:]...)
	nonce := make([]byte, b.aead.NonceSize())
	rand.Read(nonce)
	out = append(out, nonce...)
	return b.aead.Seal(out, nonce, value, additional(tenant, name))
}

// Open decrypts a value sealed for tenant's secret name.
func (b *Box) Open(tenant, name string, sealed []byte) ([]byte, error) {
	head := 1 + len(b.id) + b.aead.NonceSize()
	if len(sealed) < head+b.aead.Overhead() || sealed[0] != sealedVersion {
		return nil, errors.New("secrets: malformed sealed value")
	}
	if string(sealed[1:1+len(b.id)]) != string(b.id[:]) {
		return nil, ErrWrongKey
	}
	v, err := b.aead.Open(nil, sealed[1+len(b.id):head], sealed[head:], additional(tenant, name))
	if err != nil {
		return nil, errors.New("secrets: the sealed value does not belong to this secret or is corrupt")
	}
	return v, nil
}

// Store is what the service needs of the metadata store.
type Store interface {
	PutSecret(ctx context.Context, s meta.Secret) (created bool, err error)
	Secret(ctx context.Context, tenant, name string) (meta.Secret, error)
	ListSecrets(ctx context.Context, tenant string) ([]meta.Secret, error)
	DeleteSecret(ctx context.Context, tenant, name string) error
}

// Info describes a stored secret; it never holds the value.
type Info struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Service stores and resolves tenant secrets.
type Service struct {
	store Store
	box   *Box
}

// New returns a Service over store, sealing with box.
func New(store Store, box *Box) *Service { return &Service{store: store, box: box} }

// CheckValue says what is wrong with a value, or nil. Values are used in
// headers and environments: no line breaks or NUL; and they are redacted
// from results, which needs a minimum length.
func CheckValue(v string) error {
	switch {
	case len(v) < MinValueBytes:
		return fmt.Errorf("a secret value needs at least %d bytes (shorter values could not be told apart from ordinary text when redacted)", MinValueBytes)
	case len(v) > MaxValueBytes:
		return fmt.Errorf("a secret value holds at most %d bytes", MaxValueBytes)
	case strings.ContainsAny(v, "\r\n\x00"):
		return errors.New("a secret value may not hold line breaks or NUL")
	}
	return nil
}

// Put creates or replaces tenant's secret name. The caller checks name and
// value (see secretref.NameRE and CheckValue).
func (s *Service) Put(ctx context.Context, tenant, name, value string) (Info, bool, error) {
	now := time.Now().UTC()
	rec := meta.Secret{TenantID: tenant, Name: name, Sealed: s.box.Seal(tenant, name, []byte(value)), CreatedAt: now, UpdatedAt: now}
	created, err := s.store.PutSecret(ctx, rec)
	if err != nil {
		return Info{}, false, err
	}
	got, err := s.store.Secret(ctx, tenant, name)
	if err != nil {
		return Info{}, false, err
	}
	return Info{Name: name, CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}, created, nil
}

// NotSetError reports a reference to a secret the tenant has not stored.
type NotSetError struct{ Name string }

// Error tells the user how to store the secret.
func (e *NotSetError) Error() string {
	return fmt.Sprintf("secret %q is not set in this tenant; store it with PUT /v1/secrets {\"name\": %q, \"value\": \"…\"}", e.Name, e.Name)
}

// Get returns the value of tenant's secret name; a missing secret is an
// *NotSetError.
func (s *Service) Get(ctx context.Context, tenant, name string) (string, error) {
	rec, err := s.store.Secret(ctx, tenant, name)
	if errors.Is(err, meta.ErrNotFound) {
		return "", &NotSetError{Name: name}
	}
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	v, err := s.box.Open(tenant, name, rec.Sealed)
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	return string(v), nil
}

// List describes tenant's secrets, by name.
func (s *Service) List(ctx context.Context, tenant string) ([]Info, error) {
	recs, err := s.store.ListSecrets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(recs))
	for i, r := range recs {
		out[i] = Info{Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// Delete removes tenant's secret name (meta.ErrNotFound when absent).
func (s *Service) Delete(ctx context.Context, tenant, name string) error {
	return s.store.DeleteSecret(ctx, tenant, name)
}
