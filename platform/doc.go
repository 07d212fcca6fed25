// Package platform is Weft's agent platform: the HTTP API of `weft serve`
// (see docs/api.md) — tenants and API keys, agents as data, sessions, the chat
// turn with token streaming over SSE, and an OpenAI-compatible endpoint.
//
// A Server is an http.Handler built from a metadata store (package meta:
// SQLite embedded by default, PostgreSQL to scale out) and a session store
// (package memory: SQLite embedded, or Redis). With PostgreSQL and Redis
// holding all shared state, replicas are stateless: any replica serves any
// session.
//
// Timeouts: an agent's "timeouts" object ({first_token_ms, idle_ms,
// turn_ms}; defaults 60000, 30000 and 300000) bounds its turns. Each model
// call's answer must begin within first_token_ms (its retries included)
// and may not pause longer than idle_ms between chunks; the whole turn
// (model calls, tools, delegations) must end within turn_ms. A blocking
// chat calls the model streaming too, so the same limits apply to it. A
// turn that times out ends with model_error and a message that says
// timeout; the user's message and any partial answer are kept.
package platform
