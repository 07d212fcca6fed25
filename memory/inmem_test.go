package memory_test

import (
	"testing"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/memorytest"
)

func TestInMemoryContract(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return memory.NewInMemory() })
}

// turnlessStore is an InMemory seen without its TurnStore: a Chat over it
// holds turns with Lock, Load and Append.
type turnlessStore struct {
	memory.Store
	memory.Locker
	memory.Lister
	memory.Trimmer
	memory.SummaryStore
}

// TestChatBeginWithoutTurnStore runs the contract suite, whose turn tests
// go through Chat.Begin, over a store that is not a TurnStore.
func TestChatBeginWithoutTurnStore(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store {
		m := memory.NewInMemory()
		return turnlessStore{m, m, m, m, m}
	})
}

// turnStore is an InMemory seen only through its interfaces: a Chat over
// it holds turns with InMemory's TurnStore methods (a Chat over an
// InMemory itself takes a path without closures).
type turnStore struct {
	memory.Store
	memory.Locker
	memory.Lister
	memory.Trimmer
	memory.TurnStore
	memory.SummaryStore
}

// TestInMemoryTurnStore runs the contract suite through InMemory's
// TurnStore methods.
func TestInMemoryTurnStore(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store {
		m := memory.NewInMemory()
		return turnStore{m, m, m, m, m, m}
	})
}
