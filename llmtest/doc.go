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
// [Conformance] is the provider conformance suite: text, streams that
// arrive in pieces, tool calls split across chunks, HTTP errors typed by
// kind (authentication, rate limit with Retry-After, context too long,
// server errors), a stream that breaks after HTTP 200, retries through
// [llm.Model], and cancellation. Every provider in Weft runs it, and so can
// your own: give it a function that starts a fake serving a script of
// [Turn]s on your provider's wire (a [Server] for the OpenAI wire; see
// [Turn.TextPieces] and [Turn.ArgPieces] for another) and returns your
// driver pointed at it.
//
//	func TestConformance(t *testing.T) {
//		llmtest.Conformance(t, func(t *testing.T, turns ...llmtest.Turn) llm.ChatModel {
//			srv := llmtest.NewServer(turns...)
//			t.Cleanup(srv.Close)
//			m, err := openai.New(openai.WithModel("gpt-4o-mini"), openai.WithBaseURL(srv.URL()))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return m
//		})
//	}
//
// [Recorder] is an http.RoundTripper that records real exchanges to a JSON
// cassette under testdata and replays them later, so tests of a provider can
// run offline against what the provider really sent.
package llmtest
