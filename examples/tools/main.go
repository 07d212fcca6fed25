// Command tools gives the model tools made from plain Go functions: their
// parameters are described by JSON Schema from the argument type, their
// arguments decoded and checked, their results encoded for the model.
//
//	go run ./examples/tools "What does get_weather say for Paris?"
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
	"github.com/weftlabs/weft/tool"
)

// CityArgs are get_weather's parameters.
type CityArgs struct {
	City string `json:"city" description:"the city, for example Paris"`
}

// Weather is get_weather's result.
type Weather struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

// getWeather is an ordinary Go function; a real one would call a service.
func getWeather(ctx context.Context, in CityArgs) (Weather, error) {
	if in.City == "" {
		return Weather{}, errors.New("no city given")
	}
	return Weather{City: in.City, TempC: 21}, nil
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
	ask, err := ai.Func[string, ai.Result[string]](model,
		ai.System("Answer weather questions with the get_weather tool."),
		ai.Tools(tool.Func("get_weather", "Current weather of a city.", getWeather)))
	if err != nil {
		return err
	}
	question := `What does get_weather say for "Paris"?`
	if len(args) > 0 {
		question = strings.Join(args, " ")
	}
	res, err := ask(ctx, question)
	if err != nil {
		return err
	}
	for _, x := range res.ToolExecutions {
		fmt.Fprintf(w, "tool %s(%s) -> %s\n", x.Call.Name, x.Call.Arguments, x.Content)
	}
	fmt.Fprintln(w, "answer:", res.Value)
	return nil
}
