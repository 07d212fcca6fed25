package all_test

import (
	"slices"
	"testing"

	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

func TestEveryProviderRegistered(t *testing.T) {
	names := provider.Names()
	for _, want := range []string{"anthropic", "ollama", "openai", "scripted"} {
		if !slices.Contains(names, want) {
			t.Errorf("provider %q not registered (have %v)", want, names)
		}
	}
	for _, name := range names {
		p, _ := provider.Lookup(name)
		if p.Description == "" {
			t.Errorf("provider %q has no description", name)
		}
	}
}
