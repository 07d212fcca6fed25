// Command adkserver is the ADK peer of the bench/peers harness:
// google/adk-go's REST server (adkrest) over an llmagent whose model is a
// chat-completions adapter (model.go) of the upstream named by
// WEFT_PEERS_UPSTREAM, with ADK's in-memory sessions. It prints
// "LISTEN <url>" and serves until its standard input closes.
//
// It is a module of its own: adk-go v2.2.0 needs the OpenTelemetry log API
// of otel v1.44 (go.opentelemetry.io/otel/log v0.20.0), which does not
// build beside the OpenTelemetry that Weft itself requires.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/server/adkrest"
	"google.golang.org/adk/v2/session"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "adkserver:", err)
		os.Exit(1)
	}
}

func run() error {
	m := &chatModel{name: "gpt-4o-mini", url: os.Getenv("WEFT_PEERS_UPSTREAM"), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}
	a, err := llmagent.New(llmagent.Config{Name: "bench", Model: m, Description: "bench", Instruction: "You answer questions."})
	if err != nil {
		return err
	}
	h, err := adkrest.NewServer(adkrest.ServerConfig{
		AgentLoader:     agent.NewSingleLoader(a),
		SessionService:  session.InMemoryService(),
		SSEWriteTimeout: 120 * time.Second,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go hs.Serve(ln)
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	return hs.Close()
}
