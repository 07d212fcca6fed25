// Package turn holds the vocabulary of the platform's turn service: the one
// path every transport of weft serve starts a chat turn through — the native
// chat API, the OpenAI-compatible endpoint, delegation, MCP, A2A and
// workflows.
//
// A transport builds an [Input] (the agent; a stored session or a stateless
// history; the new message or the client's tool results; parameters) and
// reads the turn as a typed event stream, iter.Seq2[[Event], error]. A
// blocking transport drains it with [Collect]. A failure ends the stream
// with an [*Error], whose Code is one of the API's error codes; the edge
// maps it to its own shape (an HTTP status, an OpenAI error, a JSON-RPC
// error). Nothing here knows about HTTP: each edge encodes the events once,
// in its own wire format.
package turn
