package llm

// ChunkType says what a [Chunk] carries.
type ChunkType uint8

// The kinds of stream chunk.
const (
	// ChunkText carries a piece of answer text in Text.
	ChunkText ChunkType = iota + 1
	// ChunkReasoning carries a piece of reasoning text in Text.
	ChunkReasoning
	// ChunkToolCallStart opens tool call Index with ToolCallID and ToolName.
	ChunkToolCallStart
	// ChunkToolCallDelta carries a piece of tool call Index's JSON arguments in Text.
	ChunkToolCallDelta
	// ChunkUsage carries token usage in Usage. A later usage chunk replaces an earlier one.
	ChunkUsage
	// ChunkFinish carries the finish reason. It may arrive before a usage chunk.
	ChunkFinish
	// ChunkMeta carries the response id and model name, once, when known.
	ChunkMeta
)

var chunkTypeNames = [...]string{"", "text", "reasoning", "tool_call_start", "tool_call_delta", "usage", "finish", "meta"}

// String returns the chunk type's name.
func (t ChunkType) String() string {
	if int(t) < len(chunkTypeNames) && t != 0 {
		return chunkTypeNames[t]
	}
	return "unknown"
}

// Chunk is one piece of a streamed response. It is a plain value with no
// pointers besides strings, so streams do not allocate per chunk beyond the
// text they carry.
type Chunk struct {
	Type ChunkType
	// Text is the text, reasoning or argument fragment.
	Text string
	// Index is the tool call's position among this response's tool calls.
	Index int
	// ToolCallID and ToolName are set on ChunkToolCallStart.
	ToolCallID string
	ToolName   string
	// Usage is set on ChunkUsage.
	Usage Usage
	// FinishReason is set on ChunkFinish.
	FinishReason FinishReason
	// ResponseID and Model are set on ChunkMeta.
	ResponseID string
	Model      string
}

// TextChunk returns a text chunk.
func TextChunk(s string) Chunk { return Chunk{Type: ChunkText, Text: s} }

// ReasoningChunk returns a reasoning chunk.
func ReasoningChunk(s string) Chunk { return Chunk{Type: ChunkReasoning, Text: s} }

// ToolCallStartChunk returns the chunk that opens tool call index.
func ToolCallStartChunk(index int, id, name string) Chunk {
	return Chunk{Type: ChunkToolCallStart, Index: index, ToolCallID: id, ToolName: name}
}

// ToolCallDeltaChunk returns a chunk with a fragment of tool call index's arguments.
func ToolCallDeltaChunk(index int, args string) Chunk {
	return Chunk{Type: ChunkToolCallDelta, Index: index, Text: args}
}

// UsageChunk returns a usage chunk.
func UsageChunk(u Usage) Chunk { return Chunk{Type: ChunkUsage, Usage: u} }

// FinishChunk returns a finish chunk.
func FinishChunk(r FinishReason) Chunk { return Chunk{Type: ChunkFinish, FinishReason: r} }
