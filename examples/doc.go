// Package examples holds runnable programs, one per directory, each a
// small complete use of Weft:
//
//   - typed-output: a Go function whose result is a struct the model fills;
//   - tools: tools made from Go functions, called by the model;
//   - memory-sqlite: a conversation memory per user, kept in SQLite;
//   - rag-folder: questions answered from a folder of documents;
//   - streaming: an answer printed to the terminal as it is produced;
//   - serve-client: a Go client of `weft serve`;
//   - forecast: a library function and its tests, the offline testing
//     techniques of docs/testing.md;
//   - workflow: a support workflow as data (classify, retrieve, draft,
//     check, then send or escalate), run by package workflow;
//   - evals: eval suites over a support agent and a workflow (and an ADK
//     and a trpc-agent-go evalset), run offline from cassettes
//     (docs/evals.md).
//
// Every program runs offline on the scripted/demo model; set WEFT_DEFAULT_MODEL
// (for example openai/gpt-4o-mini, with OPENAI_API_KEY) to use a real one:
//
//	go run ./examples/typed-output
//
// Each directory's test runs its program, so `go test ./...` builds and
// runs them all.
package examples
