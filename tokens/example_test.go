package tokens_test

import (
	"fmt"

	"github.com/weftlabs/weft/tokens"
)

func ExampleEncoding() {
	enc := tokens.O200K()
	ids := enc.Encode("Hello, world!")
	fmt.Println(ids, enc.Count("Hello, world!"))
	fmt.Println(enc.Decode(ids))
	// Output:
	// [13225 11 2375 0] 4
	// Hello, world!
}

func ExampleForModel() {
	for _, model := range []string{"openai/gpt-4o-mini", "gpt-3.5-turbo", "claude-sonnet-4"} {
		c := tokens.ForModel(model)
		fmt.Println(model, c.Count("The quick brown fox jumps over the lazy dog."))
	}
	// Output:
	// openai/gpt-4o-mini 10
	// gpt-3.5-turbo 10
	// claude-sonnet-4 11
}
