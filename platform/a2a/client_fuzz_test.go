package a2a

import (
	"bytes"
	"testing"
)

// FuzzClientInput: no agent card or stream of a remote agent makes the
// client's readers panic.
func FuzzClientInput(f *testing.F) {
	f.Add([]byte(`{"name":"x","url":"http://a/","protocolVersion":"0.3.0","capabilities":{"streaming":true}}`))
	f.Add([]byte(`{"name":"x","supportedInterfaces":[{"url":"http://a/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\",\"id\":\"t\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := ParseCard(data); err == nil && c.URL == "" {
			t.Fatal("a card without an endpoint was accepted")
		}
		for ev, err := range sseData(bytes.NewReader(data), 1<<10) {
			if err != nil {
				break
			}
			decodeResponse(ev, V1, 200)
			decodeResponse(ev, V03, 200)
		}
	})
}
