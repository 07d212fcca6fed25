package vector_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/weftlabs/weft/rag/vector"
)

func Example() {
	ctx := context.Background()
	var idx vector.Index = vector.NewFlat(3) // or vector.NewHNSW(3) for large collections
	idx.Add(ctx,
		vector.Item{ID: "cat", Vector: []float32{0.9, 0.1, 0}, Meta: map[string]string{"kind": "animal"}},
		vector.Item{ID: "dog", Vector: []float32{0.8, 0.3, 0}, Meta: map[string]string{"kind": "animal"}},
		vector.Item{ID: "car", Vector: []float32{0, 0.2, 0.9}, Meta: map[string]string{"kind": "vehicle"}},
	)
	hits, _ := idx.Search(ctx, []float32{1, 0, 0}, 2, nil)
	for _, h := range hits {
		fmt.Printf("%s %.3f\n", h.ID, h.Score)
	}
	hits, _ = idx.Search(ctx, []float32{1, 0, 0}, 2, vector.Filter{"kind": "vehicle"})
	fmt.Println(hits[0].ID)
	// Output:
	// cat 0.994
	// dog 0.936
	// car
}

func ExampleLoadHNSW() {
	ctx := context.Background()
	h := vector.NewHNSW(2, vector.WithM(8), vector.WithEfSearch(32))
	h.Add(ctx, vector.Item{ID: "north", Vector: []float32{0, 1}}, vector.Item{ID: "east", Vector: []float32{1, 0}})

	var buf bytes.Buffer // or h.SaveFile(path) for an atomic file write
	if err := h.Save(&buf); err != nil {
		panic(err)
	}
	back, err := vector.LoadHNSW(&buf)
	if err != nil {
		panic(err)
	}
	hits, _ := back.Search(ctx, []float32{0.1, 0.9}, 1, nil)
	fmt.Println(back.Len(), hits[0].ID)
	// Output: 2 north
}
