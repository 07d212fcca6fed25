// Package platform is Weft's agent platform: the HTTP API of `weft serve`
// (see API.md) — tenants and API keys, agents as data, sessions, the chat
// turn with token streaming over SSE, and an OpenAI-compatible endpoint.
//
// A Server is an http.Handler built from a metadata store (package meta:
// SQLite embedded by default, PostgreSQL to scale out) and a session store
// (package memory: SQLite embedded, or Redis). With PostgreSQL and Redis
// holding all shared state, replicas are stateless: any replica serves any
// session.
package platform
