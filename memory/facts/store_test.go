package facts_test

import (
	"testing"

	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/facts/factstest"
)

func TestInMemoryContract(t *testing.T) {
	factstest.Run(t, func(t *testing.T) facts.Store { return facts.NewInMemory() })
}
