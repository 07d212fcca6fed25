// Command typed-output declares a Go function whose result is a struct
// that the model fills, described to it by JSON Schema.
//
//	go run ./examples/typed-output "Bob Jones is 41 years old."
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

// Person is what the model extracts.
type Person struct {
	Name string `json:"name" description:"the person's full name"`
	Age  int    `json:"age"`
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	model, err := provider.Open(cmp.Or(os.Getenv("WEFT_DEFAULT_MODEL"), "scripted/demo"))
	if err != nil {
		return err
	}
	extract, err := ai.Func[string, Person](model, ai.System("Extract the person the text is about."))
	if err != nil {
		return err
	}
	text := "Alice Smith is 30 years old."
	if len(args) > 0 {
		text = strings.Join(args, " ")
	}
	p, err := extract(ctx, text)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s is %d\n", p.Name, p.Age)
	return nil
}
