// The models of the server's configured providers (GET
// /v1/provider-models), fetched once per page, for the model choices of
// agents, workflow nodes and knowledge bases. A server without the route
// offers its default model only.
import { api } from './api.js';

let models = null;

export function providerModels(me) {
  if (!models) {
    models = api('GET', '/v1/provider-models').catch(() => ({
      default_model: me?.default_model || '', default_embedding_model: '', providers: me?.providers || [], models: [],
    }));
  }
  return models;
}

// ids returns the ids of the models of a kind ("chat" or "embedding").
export function ids(pm, kind) {
  return (pm.models || []).filter((m) => m.kind === kind).map((m) => m.id);
}
