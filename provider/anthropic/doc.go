// Package anthropic is Weft's driver for Anthropic's Messages API
// (POST /v1/messages), blocking and streamed.
//
// Importing the package registers the provider "anthropic" with the
// registry in github.com/weftlabs/weft/provider:
//
//	import _ "github.com/weftlabs/weft/provider/anthropic"
//
//	m, err := provider.Open("anthropic/claude-sonnet-4-5")
//
// The registered provider reads ANTHROPIC_API_KEY (required) and
// ANTHROPIC_BASE_URL (default https://api.anthropic.com), and sends
// "anthropic-version: 2023-06-01".
//
// # Why a hand-written client
//
// The official SDK (github.com/anthropics/anthropic-sdk-go) is large,
// retries inside the client, and has its own error and streaming types. Weft
// needs a thin mapping from its vocabulary to the wire: this package speaks
// the Messages API over net/http and encoding/json, decodes server-sent
// events with Weft's bounded internal/sse reader, tolerates fields it does
// not know, returns the same typed [llm.Error] values as every other Weft
// provider, and never retries — [llm.Model] does, once, for every provider.
//
// # Mapping
//
//   - System messages, wherever they appear, are joined (with blank lines)
//     into the top-level "system" field.
//   - Consecutive messages of one role are merged, as the API requires; tool
//     results become "tool_result" blocks of a user message, placed before
//     any text of that message, with is_error honoured.
//   - Images: inline bytes and data: URLs become base64 sources; http(s)
//     URLs become url sources.
//   - Assistant tool calls become "tool_use" blocks whose input is the parsed
//     JSON arguments; arguments that are not a JSON object are an
//     ErrBadRequest error naming the call, never silently replaced.
//   - Tool choice: auto → auto, required → any, tool → tool with its name,
//     none → none.
//   - MaxTokens defaults to 4096 (the API requires it). Temperature, TopP and
//     Stop (stop_sequences) are sent; Seed is ignored: the API has no seed.
//   - FormatJSONSchema sends output_config.format (Anthropic structured
//     outputs). FormatJSON is refused: the API has no schemaless JSON mode.
//   - Extra is merged into the top-level body as given, for example
//     {"thinking": {"type": "enabled", "budget_tokens": 2048}} or
//     {"top_k": 40}; an Extra key replaces a field of the same name.
//   - Responses: thinking blocks become Reasoning; stop reasons end_turn and
//     stop_sequence → stop, max_tokens and model_context_window_exceeded →
//     length, tool_use → tool_calls, refusal → content_filter.
//   - Usage: PromptTokens counts every input token, cached or not
//     (input_tokens + cache_creation_input_tokens + cache_read_input_tokens);
//     CachedTokens is cache_read_input_tokens.
//
// Reasoning is not sent back to the API (llm.Message carries no thinking
// signature), so a conversation that combines extended thinking with tool
// use must keep thinking off for the turns that carry tool results.
package anthropic
