package platform

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// providerModel is one model the console offers in its model choices.
type providerModel struct {
	// ID is what an agent's model, a workflow node's model or a knowledge
	// base's embedding_model takes: "provider/model", a provider alone
	// (its default model), or an alias of the server's configuration.
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// Kind is "chat" or "embedding".
	Kind string `json:"kind"`
	// AliasOf is the provider/model an alias stands for.
	AliasOf string `json:"alias_of,omitempty"`
}

// providerModelsAnswer is the answer of GET /v1/provider-models.
type providerModelsAnswer struct {
	DefaultModel          string          `json:"default_model"`
	DefaultEmbeddingModel string          `json:"default_embedding_model"`
	Providers             []string        `json:"providers"`
	Models                []providerModel `json:"models"`
}

// specProvider returns the provider of a model spec ("openai/gpt-4o" →
// "openai", "anthropic" → "anthropic").
func specProvider(spec string) string {
	p, _, _ := strings.Cut(spec, "/")
	return p
}

// modelKind guesses whether a model embeds or chats, by its name.
func modelKind(spec string) string {
	if strings.Contains(strings.ToLower(spec), "embed") {
		return "embedding"
	}
	return "chat"
}

// providerModels: GET /v1/provider-models lists the models of the
// providers this server is configured with: its default model and default
// embedding model, the aliases of its configuration, and the models of the
// price table of those providers; for the console's model choices.
func (s *Server) providerModels(w http.ResponseWriter, r *http.Request) {
	out := providerModelsAnswer{DefaultModel: s.cfg.DefaultModel, DefaultEmbeddingModel: s.cfg.DefaultEmbeddingModel, Providers: []string{}, Models: []providerModel{}}
	resolve := func(spec string) string { return cmp.Or(s.cfg.ModelAliases[spec], spec) }
	seen := map[string]bool{}
	addProvider := func(p string) {
		if p != "" && !slices.Contains(out.Providers, p) {
			out.Providers = append(out.Providers, p)
		}
	}
	add := func(id, kind string) {
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		m := providerModel{ID: id, Kind: kind, Provider: specProvider(resolve(id))}
		if t, ok := s.cfg.ModelAliases[id]; ok {
			m.AliasOf = t
		}
		out.Models = append(out.Models, m)
		addProvider(m.Provider)
	}
	add(s.cfg.DefaultModel, modelKind(resolve(s.cfg.DefaultModel)))
	add(s.cfg.DefaultEmbeddingModel, "embedding")
	for _, a := range slices.Sorted(maps.Keys(s.cfg.ModelAliases)) {
		add(a, modelKind(s.cfg.ModelAliases[a]))
	}
	if s.accounting != nil {
		for _, spec := range slices.Sorted(maps.Keys(s.accounting.prices.exact)) {
			if slices.Contains(out.Providers, specProvider(spec)) {
				add(spec, modelKind(spec))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
