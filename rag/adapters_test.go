package rag_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
)

func TestFuncAdapters(t *testing.T) {
	ctx := context.Background()
	var r rag.ChunkReader = rag.ChunkReaderFunc(func(_ context.Context, ids []string) ([]rag.Chunk, error) {
		out := make([]rag.Chunk, len(ids))
		for i, id := range ids {
			out[i] = rag.Chunk{ID: id}
		}
		return out, nil
	})
	if cs, err := r.ReadChunks(ctx, []string{"a", "b"}); err != nil || len(cs) != 2 || cs[1].ID != "b" {
		t.Errorf("ChunkReaderFunc.ReadChunks = %+v, %v", cs, err)
	}
	var q rag.QueryTransformer = rag.QueryTransformerFunc(func(_ context.Context, q rag.Query) ([]string, error) {
		return []string{q.Text, q.Text + "?"}, nil
	})
	if got, err := q.Transform(ctx, rag.Query{Text: "x"}); err != nil || !slices.Equal(got, []string{"x", "x?"}) {
		t.Errorf("QueryTransformerFunc.Transform = %q, %v", got, err)
	}
}

// stuckModel answers nothing until its context ends.
type stuckModel struct{}

func (stuckModel) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m stuckModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		_, err := m.Generate(ctx, req)
		yield(llm.Chunk{}, err)
	}
}

// TestTransformTimeout checks that TransformTimeout bounds the model call
// of a transform when the caller's context has no deadline.
func TestTransformTimeout(t *testing.T) {
	c, err := rag.CompressQuery(stuckModel{}, rag.TransformTimeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Transform(context.Background(), rag.Query{Text: "and its price?", History: x200History})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Transform with a stuck model: err = %v, want context.DeadlineExceeded", err)
	}
}
