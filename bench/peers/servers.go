package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/redis/go-redis/v9"
	tllmagent "trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	tmodel "trpc.group/trpc-go/trpc-agent-go/model"
	topenai "trpc.group/trpc-go/trpc-agent-go/model/openai"
	tserver "trpc.group/trpc-go/trpc-agent-go/server/openai"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
)

// Environment of a server child process.
const (
	envServe    = "WEFT_PEERS_SERVE" // target name
	envUpstream = "WEFT_PEERS_UPSTREAM"
	envDir      = "WEFT_PEERS_DIR"
	envRedis    = "WEFT_PEERS_REDIS"
	envProfile  = "WEFT_PEERS_CPUPROFILE" // directory, or ""
)

const (
	adminKey   = "weft-peers-admin-key-0123456789"
	benchModel = "openai/gpt-4o-mini"
	appName    = "bench"
)

// serve runs one target's server in this (child) process: it prints
// "LISTEN <url>" on stdout and serves until stdin closes.
func serve(target string) error {
	ctx := context.Background()
	upstream := os.Getenv(envUpstream)
	var h http.Handler
	var closeFn func()
	var err error
	switch target {
	case "weft-sqlite", "weft-redis":
		h, closeFn, err = weftHandler(ctx, target == "weft-redis", upstream)
	case "trpc":
		h, closeFn, err = trpcHandler(upstream)
	case "relay":
		h = relay(upstream)
	default:
		err = fmt.Errorf("unknown target %q", target)
	}
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
	if dir := os.Getenv(envProfile); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", target, os.Getpid())))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	hs.Close()
	if closeFn != nil {
		closeFn()
	}
	return nil
}

// weftHandler is weft serve's platform handler over SQLite metadata and
// SQLite (or Redis) sessions, with the same settings as cmd/weft-bench.
func weftHandler(ctx context.Context, useRedis bool, upstream string) (http.Handler, func(), error) {
	dir := os.Getenv(envDir)
	ms, err := meta.OpenSQLite(ctx, filepath.Join(dir, "weft.db"))
	if err != nil {
		return nil, nil, err
	}
	var sessions memory.Store
	var rdb *redis.Client
	closers := []func(){func() { ms.Close() }}
	if useRedis {
		opts, err := redis.ParseURL(os.Getenv(envRedis))
		if err != nil {
			return nil, nil, err
		}
		rdb = redis.NewClient(opts)
		closers = append(closers, func() { rdb.Close() })
		rs, err := redisstore.New(rdb, redisstore.WithPrefix("weftpeers"+fmt.Sprint(os.Getpid())), redisstore.WithTTL(time.Hour))
		if err != nil {
			return nil, nil, err
		}
		sessions = rs
	} else {
		ss, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "sessions.db"))
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { ss.Close() })
		sessions = ss
	}
	if _, err := platform.Bootstrap(ctx, ms, adminKey); err != nil {
		return nil, nil, err
	}
	cfg := platform.Config{
		Meta: ms, Sessions: sessions, DefaultModel: benchModel,
		OpenModel: func(spec string) (*llm.Model, error) {
			return provider.Open(spec, provider.WithBaseURL(upstream), provider.WithAPIKey("bench"))
		},
		Logger:    slog.New(slog.DiscardHandler),
		RateLimit: -1,
	}
	if rdb != nil {
		cfg.Redis = rdb
	}
	srv, err := platform.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	closers = append([]func(){func() { srv.Close() }}, closers...)
	return srv, func() {
		for _, c := range closers {
			c()
		}
	}, nil
}

// trpcHandler is trpc-agent-go's OpenAI-compatible server over an
// llmagent, its OpenAI model and its default (in-memory) sessions.
func trpcHandler(upstream string) (http.Handler, func(), error) {
	m := topenai.New("gpt-4o-mini", topenai.WithBaseURL(upstream), topenai.WithAPIKey("bench"))
	a := tllmagent.New(appName, tllmagent.WithModel(m), tllmagent.WithInstruction("You answer questions."),
		tllmagent.WithGenerationConfig(tmodel.GenerationConfig{Stream: true}))
	s, err := tserver.New(tserver.WithAgent(a), tserver.WithAppName(appName), tserver.WithModelName("gpt-4o-mini"))
	if err != nil {
		return nil, nil, err
	}
	return s.Handler(), func() { s.Close() }, nil
}

// relay is the floor of streamed turns: the client's OpenAI request sent
// upstream with stream=true, the SSE lines copied back, flushed per event
// (the same as cmd/weft-bench's relay).
func relay(upstream string) http.Handler {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadBytes('\n')
			w.Write(line)
			if len(bytes.TrimSpace(line)) == 0 {
				fl.Flush()
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return
				}
				fl.Flush()
				return
			}
		}
	})
}
