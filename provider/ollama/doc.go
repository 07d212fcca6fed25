// Package ollama is Weft's driver for Ollama's native API: chat over
// /api/chat with NDJSON streaming, and embeddings over /api/embed.
//
// Importing the package registers the provider "ollama" with the registry in
// github.com/weftlabs/weft/provider, so models open by name:
//
//	import _ "github.com/weftlabs/weft/provider/ollama"
//
//	m, err := provider.Open("ollama/llama3.2")
//
// The registered provider reads OLLAMA_HOST (default http://127.0.0.1:11434;
// a bare host:port is accepted, as the ollama CLI accepts it) and, for hosted
// Ollama, OLLAMA_API_KEY, sent as a bearer token.
//
// # Why a hand-written client
//
// Ollama's own Go client lives in the github.com/ollama/ollama module, which
// brings the whole server's dependency graph with it. The wire protocol is a
// handful of JSON objects, so this package speaks it over net/http and
// encoding/json: a small dependency surface, tolerant parsing (unknown fields
// are ignored, tool-call ids are assigned when the server sends none), the
// same typed [llm.Error] values as every other Weft provider, and no retries
// inside the driver — [llm.Model] retries, once, for every provider.
//
// # Mapping
//
//   - Messages: system, user (text and images), assistant (text and tool
//     calls, with arguments sent as JSON objects) and tool results (with
//     tool_name and tool_call_id). Images must be inline bytes or data: URLs:
//     Ollama accepts only base64 images, and the driver never fetches URLs.
//     Ollama has no error flag for tool results; IsError is not sent.
//   - Tool choice: Ollama cannot force a tool call. ToolChoiceNone omits the
//     tools; ToolChoiceTool sends only the named tool; ToolChoiceRequired is
//     sent as auto.
//   - Response format: FormatJSON sends "format": "json"; FormatJSONSchema
//     sends the schema object as "format".
//   - Sampling: Temperature, TopP, MaxTokens (num_predict), Stop and Seed go
//     into "options".
//   - Extra: keys that name top-level fields of the chat request
//     (keep_alive, think, truncate, shift, logprobs, top_logprobs, and
//     format, tools, messages, model, stream, which they replace) are set
//     on the body; an "options" map is merged into options; every other key
//     is merged into options (for example num_ctx, top_k, repeat_penalty),
//     where Ollama reads model parameters.
//   - Responses: message.thinking becomes reasoning; tool calls' argument
//     objects become JSON text and get ids "call_<n>" when the server sends
//     none; done_reason "stop" becomes FinishToolCalls when the answer called
//     tools, "length" becomes FinishLength; prompt_eval_count and eval_count
//     become usage.
package ollama
