package llm

import (
	"context"
	"iter"
)

// ChatModel is the interface a provider implements: the whole driver contract
// for chat. Implementations are safe for concurrent use, do not retry (the
// [Model] wrapper does), and return [*Error] values for failures so callers
// can branch on their kind.
type ChatModel interface {
	// Generate returns the model's complete answer.
	Generate(ctx context.Context, req *Request) (*Response, error)
	// Stream returns the answer as it is produced. The stream ends with a
	// ChunkFinish (and perhaps a later ChunkUsage); a stream that ends
	// without a finish yields an error of kind ErrStreamBroken. Breaking out
	// of the loop cancels the underlying request.
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Capabilities are the abilities a model declares.
type Capabilities struct {
	Tools      bool `json:"tools"`
	JSONSchema bool `json:"json_schema"`
	JSONMode   bool `json:"json_mode"`
	Vision     bool `json:"vision"`
	Streaming  bool `json:"streaming"`
	Reasoning  bool `json:"reasoning"`
	// ContextWindow is the model's context size in tokens, or 0 when unknown.
	ContextWindow int `json:"context_window,omitempty"`
}

// CapabilityReporter is implemented by drivers that declare their abilities.
// A driver without it is assumed to stream and call tools, and nothing more.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// Namer is implemented by drivers that know their "provider/model" name.
type Namer interface {
	Name() string
}

// EmbedRequest asks for the embeddings of some texts.
type EmbedRequest struct {
	Inputs []string `json:"inputs"`
	// Dimensions asks for shortened vectors, where the model supports it.
	Dimensions int `json:"dimensions,omitempty"`
}

// EmbedResponse holds one vector per input, in input order.
type EmbedResponse struct {
	Vectors [][]float32 `json:"vectors"`
	Model   string      `json:"model,omitempty"`
	Usage   Usage       `json:"usage"`
}

// EmbeddingModel is implemented by drivers that compute embeddings.
type EmbeddingModel interface {
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error)
}

// ModerationResult is the verdict on one input.
type ModerationResult struct {
	Flagged bool `json:"flagged"`
	// Categories maps category names to whether the input was flagged for them.
	Categories map[string]bool `json:"categories,omitempty"`
	// Scores maps category names to the model's confidence.
	Scores map[string]float64 `json:"scores,omitempty"`
}

// ModerationModel is implemented by drivers that classify content.
type ModerationModel interface {
	Moderate(ctx context.Context, inputs []string) ([]ModerationResult, error)
}

// ImageRequest asks for generated images.
type ImageRequest struct {
	Prompt string `json:"prompt"`
	// N is the number of images; 0 means 1.
	N int `json:"n,omitempty"`
	// Size is "WIDTHxHEIGHT" (for example "1024x1024"); empty means default.
	Size    string `json:"size,omitempty"`
	Quality string `json:"quality,omitempty"`
	Style   string `json:"style,omitempty"`
	// Format is "url" or "b64_json"; empty means the provider's default.
	Format string         `json:"format,omitempty"`
	Extra  map[string]any `json:"extra,omitempty"`
}

// GeneratedImage is one generated image: a URL or the bytes.
type GeneratedImage struct {
	URL           string `json:"url,omitempty"`
	Data          []byte `json:"data,omitempty"`
	MIMEType      string `json:"mime_type,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// ImageResponse holds the generated images.
type ImageResponse struct {
	Images []GeneratedImage `json:"images"`
	Usage  Usage            `json:"usage"`
}

// ImageModel is implemented by drivers that generate images.
type ImageModel interface {
	GenerateImage(ctx context.Context, req *ImageRequest) (*ImageResponse, error)
}
