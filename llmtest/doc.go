// Package llmtest is Weft's test kit for code that talks to models over HTTP.
//
// [Server] is a fake OpenAI-compatible API (chat completions, streamed and
// not, embeddings, model listing) scripted turn by turn. Each [Turn] says
// what one HTTP exchange answers, including the wire behaviours real
// providers exhibit and clients must survive: text split into many chunks,
// tool-call arguments split over fragments with the id and name only in the
// first, text before a tool call, keep-alive comments, a usage chunk with an
// empty choices array, duplicate finish chunks, an error sent after HTTP 200,
// a stream that ends without a finish reason, HTTP errors with Retry-After,
// and a slow first byte. With an empty script the server echoes the last
// user message, which makes it a cheap target for load and benchmarks.
//
//	srv := llmtest.NewServer(
//		llmtest.RateLimited(20*time.Millisecond),
//		llmtest.Reply("Hello!"),
//	)
//	defer srv.Close()
//	// point a client at srv.URL() (it ends in /v1)
//
// [Recorder] is an http.RoundTripper that records real exchanges to a JSON
// cassette under testdata and replays them later, so tests of a provider can
// run offline against what the provider really sent.
package llmtest
