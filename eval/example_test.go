package eval_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/eval"
)

// echoTarget is a stand-in agent that answers in capitals.
type echoTarget struct{}

func (echoTarget) Chat(_ context.Context, agent, session, msg string) (*eval.Answer, error) {
	return &eval.Answer{Text: strings.ToUpper(msg), SessionID: "s1"}, nil
}

func (echoTarget) RunWorkflow(context.Context, string, map[string]any) (*eval.Answer, error) {
	return &eval.Answer{Status: "succeeded"}, nil
}

func ExampleRun() {
	suite, err := eval.Parse([]byte(`
name: shouting
agent: echo
cases:
  - id: hello
    user: hello
    expect:
      text: {exact: HELLO}
  - id: polite
    user: thank you
    expect:
      text: {contains: please}
`), "shouting.yaml")
	if err != nil {
		panic(err)
	}
	res, err := eval.Run(context.Background(), echoTarget{}, suite)
	if err != nil {
		panic(err)
	}
	for _, c := range res.Cases {
		fmt.Println(c.ID, c.Pass)
	}
	fmt.Printf("%d of %d passed\n", res.Passed(), len(res.Cases))
	// Output:
	// hello true
	// polite false
	// 1 of 2 passed
}

func ExampleParse() {
	_, err := eval.Parse([]byte("name: s\nagent: a\ncases:\n  - id: x\n    user: hi\n    repeat: twice\n"), "s.yaml")
	fmt.Println(err)
	// Output:
	// s.yaml:6: cases[0].repeat: got string, want integer
}

func ExampleRouge1() {
	fmt.Printf("%.3f\n", eval.Rouge1("The cats were running", "a cat runs"))
	// Output:
	// 0.571
}
