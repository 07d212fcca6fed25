// Package llm is Weft's model vocabulary: messages, requests, responses, stream
// chunks, usage, typed errors, and the small provider interfaces that every
// model driver implements.
//
// The package has two halves, in the manner of database/sql and its driver
// package:
//
//   - The driver side is tiny. A provider implements [ChatModel] (one method
//     for a whole response, one for a stream). Optional abilities are separate
//     interfaces found by type assertion: [EmbeddingModel], [ModerationModel],
//     [ImageModel] and [CapabilityReporter].
//   - The user side is one concrete type, [Model], which wraps any driver and
//     adds, once for every provider, retries with capped exponential backoff
//     and jitter (honouring Retry-After), a per-call timeout, ordered fallbacks
//     to other models before the first token, and hooks for requests,
//     responses and errors. Retries happen here and nowhere else.
//
// Streams are iter.Seq2[Chunk, error]; an [Accumulator] turns a stream into a
// [Response], so a blocking call is always a drained stream when a caller
// wants it to be.
//
// Errors that callers must branch on are [*Error] values that match the
// sentinel kinds ([ErrRateLimited], [ErrAuthentication], …) with errors.Is.
package llm
