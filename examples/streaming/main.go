// Command streaming prints a model's answer to the terminal as it is
// produced.
//
//	go run ./examples/streaming "Tell me about Go."
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
	chat, err := ai.StreamFunc[string](model, ai.System("You are concise."))
	if err != nil {
		return err
	}
	question := "Tell me about Go."
	if len(args) > 0 {
		question = strings.Join(args, " ")
	}
	// Each piece is printed as it arrives; breaking out of the loop would
	// cancel the call.
	for piece, err := range chat(ctx, question) {
		if err != nil {
			return err
		}
		fmt.Fprint(w, piece)
	}
	fmt.Fprintln(w)
	return nil
}
