// Package e2e holds the platform's end-to-end and compatibility tests: the
// weft binary run as real processes (scale-out over one PostgreSQL and one
// Redis, crash and graceful shutdown, the README's first run) and the
// official OpenAI Node client against the OpenAI-compatible endpoint. It
// has no non-test code; upstream models are faked with package llmtest.
package e2e
