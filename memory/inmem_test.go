package memory_test

import (
	"testing"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/memorytest"
)

func TestInMemoryContract(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return memory.NewInMemory() })
}
