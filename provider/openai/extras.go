package openai

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Embed sends the inputs to /embeddings and returns one vector per input,
// in input order.
func (c *Client) Embed(ctx context.Context, req *llm.EmbedRequest) (_ *llm.EmbedResponse, err error) {
	defer func() { err = c.api.Redact(err) }()
	if req == nil || len(req.Inputs) == 0 {
		return &llm.EmbedResponse{Model: c.model}, nil
	}
	var w embedResponse
	resp, err := c.postJSON(ctx, "embeddings", embedRequest{Model: c.model, Input: req.Inputs, Dimensions: req.Dimensions, EncodingFormat: "float"}, &w)
	if err != nil {
		return nil, err
	}
	if err := c.bodyError(w.Error, resp.StatusCode); err != nil {
		return nil, err
	}
	if len(w.Data) != len(req.Inputs) {
		return nil, c.malformed(resp.StatusCode, fmt.Sprintf("%d embeddings for %d inputs", len(w.Data), len(req.Inputs)))
	}
	out := &llm.EmbedResponse{Vectors: make([][]float32, len(req.Inputs)), Model: w.Model, Usage: toUsage(w.Usage)}
	for i, d := range w.Data {
		// Servers order data by index; some send no index at all (all 0),
		// and then order is all there is.
		idx := d.Index
		if idx < 0 || idx >= len(out.Vectors) || out.Vectors[idx] != nil {
			idx = i
		}
		out.Vectors[idx] = d.Embedding
	}
	for i, v := range out.Vectors {
		if v == nil {
			return nil, c.malformed(resp.StatusCode, fmt.Sprintf("no embedding for input %d", i))
		}
	}
	return out, nil
}

// Moderate sends the inputs to /moderations and returns one verdict per
// input.
func (c *Client) Moderate(ctx context.Context, inputs []string) (_ []llm.ModerationResult, err error) {
	defer func() { err = c.api.Redact(err) }()
	if len(inputs) == 0 {
		return nil, nil
	}
	model := c.moderationModel
	if model == "" && strings.Contains(c.model, "moderation") {
		model = c.model
	}
	var w moderationResponse
	resp, err := c.postJSON(ctx, "moderations", moderationRequest{Model: model, Input: inputs}, &w)
	if err != nil {
		return nil, err
	}
	if err := c.bodyError(w.Error, resp.StatusCode); err != nil {
		return nil, err
	}
	if len(w.Results) != len(inputs) {
		return nil, c.malformed(resp.StatusCode, fmt.Sprintf("%d moderation results for %d inputs", len(w.Results), len(inputs)))
	}
	out := make([]llm.ModerationResult, len(w.Results))
	for i, r := range w.Results {
		out[i] = llm.ModerationResult{Flagged: r.Flagged, Categories: r.Categories, Scores: r.CategoryScores}
	}
	return out, nil
}

// GenerateImage sends req to /images/generations with the client's model.
// Images come back as URLs or as bytes, as req.Format asks ("url" or
// "b64_json"); req.Extra is merged into the body.
func (c *Client) GenerateImage(ctx context.Context, req *llm.ImageRequest) (_ *llm.ImageResponse, err error) {
	defer func() { err = c.api.Redact(err) }()
	if req == nil || req.Prompt == "" {
		return nil, c.badRequest("image request without a prompt")
	}
	in := any(imageRequest{Model: c.model, Prompt: req.Prompt, N: req.N, Size: req.Size, Quality: req.Quality, Style: req.Style, ResponseFormat: req.Format})
	if len(req.Extra) > 0 {
		body, err := c.mergeExtraValue(in, req.Extra)
		if err != nil {
			return nil, err
		}
		in = body
	}
	var w imageResponse
	resp, err := c.postJSON(ctx, "images/generations", in, &w)
	if err != nil {
		return nil, err
	}
	if err := c.bodyError(w.Error, resp.StatusCode); err != nil {
		return nil, err
	}
	if len(w.Data) == 0 {
		return nil, c.malformed(resp.StatusCode, "the response has no images")
	}
	out := &llm.ImageResponse{Images: make([]llm.GeneratedImage, len(w.Data)), Usage: toUsage(w.Usage)}
	for i, d := range w.Data {
		img := llm.GeneratedImage{URL: d.URL, RevisedPrompt: d.RevisedPrompt}
		if d.B64JSON != "" {
			b, err := base64.StdEncoding.DecodeString(d.B64JSON)
			if err != nil {
				return nil, c.malformed(resp.StatusCode, fmt.Sprintf("image %d: invalid base64: %v", i, err))
			}
			img.Data = b
			img.MIMEType = imageMIME(w.OutputFormat, b)
		}
		if img.URL == "" && img.Data == nil {
			return nil, c.malformed(resp.StatusCode, fmt.Sprintf("image %d has neither url nor b64_json", i))
		}
		out.Images[i] = img
	}
	return out, nil
}

func imageMIME(format string, b []byte) string {
	switch strings.ToLower(format) {
	case "png":
		return "image/png"
	case "jpeg", "jpg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	}
	return http.DetectContentType(b)
}

// bodyError reports an error object sent with a 2xx status.
func (c *Client) bodyError(e wireErrorField, status int) error {
	if !e.present {
		return nil
	}
	return &llm.Error{Kind: streamErrorKind(e.Message, e.Type, string(e.Code), llm.ErrUnavailable), Provider: c.provider,
		StatusCode: status, Code: firstNonEmpty(string(e.Code), e.Type), Message: e.Message}
}

func (c *Client) malformed(status int, msg string) error {
	return &llm.Error{Kind: llm.ErrUnavailable, Provider: c.provider, StatusCode: status, Message: msg}
}
