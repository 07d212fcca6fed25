package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/sqlstore"
)

func ExampleOpenSQLite() {
	dir, _ := os.MkdirTemp("", "weft")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "weft.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	key := memory.Key{Tenant: "acme", Agent: "support", Session: "s-1"}
	_, _ = s.Append(ctx, key,
		memory.Record{Message: llm.UserMessage("What is WAL?"), Tokens: 40},
		memory.Record{Message: llm.AssistantMessage("Write-ahead logging."), Tokens: 30},
		memory.Record{Message: llm.UserMessage("Thanks!"), Tokens: 20},
	)
	recs, _ := s.Load(ctx, key, memory.Window{MaxTokens: 60})
	for _, r := range recs {
		fmt.Println(r.Seq, r.Message.Text())
	}
	// Output:
	// 2 Write-ahead logging.
	// 3 Thanks!
}
