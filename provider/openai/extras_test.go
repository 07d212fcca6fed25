package openai

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

func TestEmbed(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0.5,-1]},{"object":"embedding","index":0,"embedding":[1,2]}],
		"model":"text-embedding-3-small","usage":{"prompt_tokens":4,"total_tokens":4}}`}
	c := newTestClient(t, serve(t, rec), WithModel("text-embedding-3-small"))
	got, err := c.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"a", "b"}, Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Vectors[0], []float32{1, 2}) || !slices.Equal(got.Vectors[1], []float32{0.5, -1}) {
		t.Errorf("vectors = %v, want them in input order", got.Vectors)
	}
	if got.Model != "text-embedding-3-small" || got.Usage != (llm.Usage{PromptTokens: 4, TotalTokens: 4}) {
		t.Errorf("model %q usage %+v", got.Model, got.Usage)
	}
	if rec.paths[0] != "/embeddings" {
		t.Errorf("path = %q", rec.paths[0])
	}
	checkGolden(t, "embeddings", rec.lastBody(t))

	empty, err := c.Embed(context.Background(), &llm.EmbedRequest{})
	if err != nil || len(empty.Vectors) != 0 || len(rec.bodies) != 1 {
		t.Errorf("empty input: %v %v, %d requests", empty, err, len(rec.bodies))
	}
}

func TestEmbedErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		kind   error
	}{
		{"count mismatch", 0, `{"data":[{"index":0,"embedding":[1]}]}`, llm.ErrUnavailable},
		{"duplicate index", 0, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]},{"index":0,"embedding":[3]}]}`, llm.ErrUnavailable},
		{"error after 200", 0, `{"error":{"message":"input too long","code":"context_length_exceeded"}}`, llm.ErrContextTooLong},
		{"http 400", 400, `{"error":{"message":"bad input"}}`, llm.ErrBadRequest},
		{"not json", 0, `hello`, llm.ErrUnavailable},
	}
	for _, tt := range tests {
		c := newTestClient(t, serve(t, &recorder{status: tt.status, answer: tt.body}))
		_, err := c.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"a", "b"}})
		if !errors.Is(err, tt.kind) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.kind)
		}
	}
	// Servers that send no index keep input order.
	c := newTestClient(t, serve(t, &recorder{answer: `{"data":[{"embedding":[1]},{"embedding":[2]}]}`}))
	got, err := c.Embed(context.Background(), &llm.EmbedRequest{Inputs: []string{"a", "b"}})
	if err != nil || got.Vectors[0][0] != 1 || got.Vectors[1][0] != 2 {
		t.Errorf("no index: %v %v", got, err)
	}
}

func TestModerate(t *testing.T) {
	t.Parallel()
	rec := &recorder{answer: `{"id":"modr-1","model":"omni-moderation-latest","results":[
		{"flagged":true,"categories":{"violence":true,"hate":false},"category_scores":{"violence":0.9,"hate":0.01}},
		{"flagged":false,"categories":{"violence":false},"category_scores":{"violence":0.001}}]}`}
	c := newTestClient(t, serve(t, rec), WithModerationModel("omni-moderation-latest"))
	got, err := c.Moderate(context.Background(), []string{"bad", "fine"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Flagged || !got[0].Categories["violence"] || got[0].Scores["violence"] != 0.9 || got[1].Flagged {
		t.Errorf("results = %+v", got)
	}
	if rec.paths[0] != "/moderations" {
		t.Errorf("path = %q", rec.paths[0])
	}
	checkGolden(t, "moderations", rec.lastBody(t))

	// A chat model's name is not sent as the moderation model.
	rec2 := &recorder{answer: `{"results":[{"flagged":false}]}`}
	c2 := newTestClient(t, serve(t, rec2))
	if _, err := c2.Moderate(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec2.lastBody(t)), "model") {
		t.Errorf("body %s names a model", rec2.lastBody(t))
	}
	if _, err := c2.Moderate(context.Background(), []string{"x", "y"}); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("result count mismatch: err = %v", err)
	}
}

func TestGenerateImage(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n0000")
	rec := &recorder{answer: `{"created":1,"data":[{"url":"https://img.example/1.png","revised_prompt":"a red cat"},{"b64_json":"` +
		base64.StdEncoding.EncodeToString(png) + `"}],"usage":{"input_tokens":10,"output_tokens":100,"total_tokens":110}}`}
	c := newTestClient(t, serve(t, rec), WithModel("gpt-image-1"))
	got, err := c.GenerateImage(context.Background(), &llm.ImageRequest{Prompt: "a cat", N: 2, Size: "1024x1024", Quality: "high", Format: "b64_json",
		Extra: map[string]any{"background": "transparent"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Images) != 2 || got.Images[0].URL != "https://img.example/1.png" || got.Images[0].RevisedPrompt != "a red cat" ||
		string(got.Images[1].Data) != string(png) || got.Images[1].MIMEType != "image/png" {
		t.Errorf("images = %+v", got.Images)
	}
	if got.Usage != (llm.Usage{PromptTokens: 10, CompletionTokens: 100, TotalTokens: 110}) {
		t.Errorf("usage = %+v", got.Usage)
	}
	if rec.paths[0] != "/images/generations" {
		t.Errorf("path = %q", rec.paths[0])
	}
	checkGolden(t, "image_generation", rec.lastBody(t))

	for _, body := range []string{`{"data":[]}`, `{"data":[{"b64_json":"%%%"}]}`, `{"data":[{}]}`, `{"error":{"message":"Your request was rejected by the safety system","code":"content_policy_violation"}}`} {
		c := newTestClient(t, serve(t, &recorder{answer: body}))
		if _, err := c.GenerateImage(context.Background(), &llm.ImageRequest{Prompt: "x"}); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
	if _, err := c.GenerateImage(context.Background(), &llm.ImageRequest{}); !errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("empty prompt: err = %v", err)
	}
	c = newTestClient(t, serve(t, &recorder{answer: `{"error":{"message":"rejected","code":"content_policy_violation"}}`}))
	if _, err := c.GenerateImage(context.Background(), &llm.ImageRequest{Prompt: "x"}); !errors.Is(err, llm.ErrContentFiltered) {
		t.Errorf("content policy: err = %v", err)
	}
}
