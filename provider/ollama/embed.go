package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/weftlabs/weft/llm"
)

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// maxEmbedBody bounds an /api/embed answer (vectors as JSON text).
const maxEmbedBody = 256 << 20

// Embed returns the embeddings of req.Inputs from /api/embed, one vector per
// input in input order.
func (m *Client) Embed(ctx context.Context, req *llm.EmbedRequest) (_ *llm.EmbedResponse, err error) {
	defer func() { err = m.api.Redact(err) }()
	if req == nil || len(req.Inputs) == 0 {
		return nil, badRequest("embed: no inputs")
	}
	body, err := json.Marshal(embedRequest{Model: m.model, Input: req.Inputs, Dimensions: req.Dimensions})
	if err != nil {
		return nil, badRequest("embed: encoding request: %v", err)
	}
	resp, err := m.post(ctx, "/api/embed", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var er embedResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxEmbedBody)).Decode(&er); err != nil {
		if ctx.Err() != nil {
			return nil, m.api.TransportError(ctx, err)
		}
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: providerName, Message: "embed: malformed answer", Err: err}
	}
	if len(er.Embeddings) != len(req.Inputs) {
		return nil, &llm.Error{Kind: llm.ErrUnavailable, Provider: providerName,
			Message: fmt.Sprintf("embed: %d vectors for %d inputs", len(er.Embeddings), len(req.Inputs))}
	}
	model := er.Model
	if model == "" {
		model = m.model
	}
	return &llm.EmbedResponse{
		Vectors: er.Embeddings,
		Model:   model,
		Usage:   llm.Usage{PromptTokens: er.PromptEvalCount, TotalTokens: er.PromptEvalCount},
	}, nil
}
