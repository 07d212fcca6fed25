// Package api holds the wire types of the Weft platform's HTTP API (see
// docs/api.md): the bodies the server writes and reads, shared by the server
// (package platform), the Go client (platform/client) and the CLI, so the
// contract is written once.
//
// The types only describe JSON; they carry no behaviour beyond small
// helpers for decoding the OpenAI request shape, whose fields may take
// several JSON forms.
package api
