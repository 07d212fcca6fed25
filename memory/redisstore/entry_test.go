package redisstore

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	want := memory.Record{Seq: 7, ID: "m", Message: llm.UserMessage("a|b"), Tokens: -3, CreatedAt: at, Partial: true}
	got, err := decodeEntry(`-3|7|{"i":"m","m":{"role":"user","parts":[{"kind":"text","text":"a|b"}]},"t":1767323045000000006,"p":true}`)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeEntry = %+v, %v; want %+v", got, err, want)
	}
	// Both payload forms round-trip.
	for _, r := range []memory.Record{
		{Seq: 1, ID: "u|1:x", Message: llm.UserMessage("a|b:c~"), Tokens: 5, CreatedAt: at},
		{Seq: 2, ID: "", Message: llm.AssistantMessage(""), Tokens: 0, CreatedAt: at, Partial: true},
		{Seq: 3, ID: "t", Message: llm.ToolResultMessage("c1", "f", "out", true), Tokens: 1, CreatedAt: at},
		{Seq: 4, ID: "r", Message: llm.Message{Role: "a|b", Parts: []llm.Part{llm.TextPart("x")}}, CreatedAt: at},
		{Seq: 5, ID: "i", Message: llm.UserParts(llm.ImageURLPart("https://x")), CreatedAt: at},
	} {
		got, err := decodeEntry(encodeEntry(t, r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %+v = %+v, %v", r, got, err)
		}
	}
	for _, bad := range []string{"", "1", "1|2", "x|2|{}", "1|y|{}", "1|2|{", "1|2|[]", `1|2|{"t":"x"}`, "1|2|~", "1|2|~u|1|0|", "1|2|~u|x|0|0:", "1|2|~u|1|2|0:", "1|2|~u|1|0|5:abc", "1|2|~u|1|0|-1:abc"} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("decodeEntry(%q) succeeded", bad)
		}
	}
}

// FuzzDecodeEntry feeds arbitrary bytes to the entry parser: it must return
// a record or an error, never panic, and what it accepts must survive a
// round trip through the encoding Append writes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(`60|1|{"i":"a","m":{"role":"user"},"t":1767323045000000000}`)
	f.Add(`0|0|{"i":"s","m":{"role":"system","parts":[{"kind":"text","text":"x"}]},"t":0,"p":true}`)
	f.Add("1|2|null")
	f.Add("5|3|~user|1767323045000000000|1|3:abchello")
	f.Add("||")
	f.Fuzz(func(t *testing.T, e string) {
		r, err := decodeEntry(e)
		if err != nil {
			return
		}
		again, err := decodeEntry(encodeEntry(t, r))
		if err != nil {
			t.Fatalf("re-encoded entry of %q does not decode: %v", e, err)
		}
		if again.Seq != r.Seq || again.Tokens != r.Tokens || again.ID != r.ID || !again.CreatedAt.Equal(r.CreatedAt) ||
			again.Partial != r.Partial || !reflect.DeepEqual(again.Message, r.Message) {
			t.Fatalf("round trip of %q changed %+v into %+v", e, r, again)
		}
	})
}

func encodeEntry(t *testing.T, r memory.Record) string {
	payload, err := encodePayload(r)
	if err != nil {
		t.Skipf("record does not encode: %v", err)
	}
	return fmt.Sprintf("%d|%d|%s", r.Tokens, r.Seq, payload)
}
