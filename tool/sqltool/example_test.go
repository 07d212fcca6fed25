package sqltool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weftlabs/weft/tool/sqltool"
)

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "sqltool-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.db")
	db, _ := sql.Open("sqlite", path)
	db.Exec(`CREATE TABLE products (name TEXT, price REAL); INSERT INTO products VALUES ('tea', 3.5), ('coffee', 4.25), ('cocoa', 5)`)
	db.Close()

	cheap, err := sqltool.New(sqltool.Config{
		Name:        "cheap_products",
		Description: "Products under a price, cheapest first.",
		Driver:      sqltool.SQLite,
		DSN:         path,
		Query:       "SELECT name, price FROM products WHERE price < ? ORDER BY price",
		Bind:        []string{"max_price"},
		Parameters:  json.RawMessage(`{"type":"object","properties":{"max_price":{"type":"number"}},"required":["max_price"]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cheap.Close()
	res, err := cheap.Call(context.Background(), json.RawMessage(`{"max_price":5}`))
	fmt.Println(res.Content, err)

	_, err = sqltool.New(sqltool.Config{Name: "oops", Driver: sqltool.SQLite, DSN: path, Query: "DELETE FROM products"})
	fmt.Println(err)
	// Output:
	// {"rows":[{"name":"tea","price":3.5},{"name":"coffee","price":4.25}],"truncated":false} <nil>
	// sqltool: tool oops: the query starts with DELETE: only a read-only statement starting with SELECT, WITH or VALUES is allowed
}
