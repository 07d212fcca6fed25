// Package openai is Weft's driver for the OpenAI Chat Completions wire
// protocol, spoken by OpenAI and by most other servers: DeepSeek, Groq,
// OpenRouter, Together, vLLM, llama.cpp, LM Studio, Ollama's /v1 endpoint,
// Azure OpenAI behind a compatible base URL, and the like.
//
// Importing the package registers the providers "openai", "deepseek",
// "groq" and "openrouter" with the provider registry:
//
//	import _ "github.com/weftlabs/weft/provider/openai"
//
//	m, err := provider.Open("openai/gpt-4o-mini")          // OPENAI_API_KEY
//	m, err := provider.Open("openai/qwen3:8b",              // a local server;
//		provider.WithBaseURL("http://localhost:11434/v1")) // no key needed
//
// or build a driver directly with [New] and wrap it in an llm.Model.
//
// # Why a hand-written client
//
// The client is written over net/http and encoding/json instead of the
// official openai-go SDK. The SDK targets OpenAI's own API and follows it
// strictly, while this package exists mostly to talk to servers that only
// resemble it: reasoning text arrives as "reasoning_content" (DeepSeek,
// llama.cpp, vLLM) or "reasoning" (OpenRouter); errors arrive inside a 200
// stream as {"error": …} or vLLM's {"object": "error", …}; some servers send
// JSON lines without SSE framing, repeat the finish chunk, send usage in the
// finish chunk or in a separate one with no choices, send tool call
// continuation fragments with an empty name, or omit "[DONE]". Owning the
// wire types also keeps the stream path allocation-light: each chunk is
// decoded into one reused struct.
//
// # Behaviour
//
// The driver never retries; llm.Model does. Every failure is an *llm.Error
// whose kind callers branch on with errors.Is: HTTP statuses map through
// llm.KindForStatus, refined by the error body ("context_length_exceeded"
// and "maximum context length" messages become llm.ErrContextTooLong,
// content-policy refusals llm.ErrContentFiltered, "insufficient_quota"
// llm.ErrAuthentication because waiting does not cure it), and Retry-After
// or Retry-After-Ms set Error.RetryAfter. A stream that ends without a
// finish reason, carries an error payload, or holds a malformed frame fails
// with llm.ErrStreamBroken unless the error payload names a more specific
// kind. Only the first choice of a response is read.
package openai
