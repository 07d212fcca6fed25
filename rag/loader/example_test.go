package loader_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/rag/loader"
)

// HTML becomes Markdown-structured text; navigation and scripts are dropped.
func ExampleLoad() {
	page := `<html><head><title>Pricing</title></head><body>
<nav><a href="/">Home</a></nav>
<h1>Plans</h1><p>Two plans:</p><ul><li>Free</li><li>Pro</li></ul>
<script>track()</script></body></html>`
	doc, err := loader.Load(context.Background(), "pricing.html", strings.NewReader(page))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.Metadata["title"])
	fmt.Print(doc.Text)
	// Output:
	// Pricing
	// # Plans
	//
	// Two plans:
	//
	// - Free
	// - Pro
}

// Bad input is a typed error that names the file.
func ExampleLoad_errors() {
	_, err := loader.Load(context.Background(), "notes.txt", strings.NewReader("text\x00\x01 with NUL bytes"))
	fmt.Println(errors.Is(err, loader.ErrBinary))
	fmt.Println(err)
	// Output:
	// true
	// loader: notes.txt: binary content is not text: NUL byte at offset 4
}
