package platform

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// An invalidation that arrives while a read is loading the old value must
// not be lost: the loaded value may answer that read, but it may not stay
// in the cache (else a replica serves a stale agent for the whole TTL).
func TestCacheInvalidationDuringLoad(t *testing.T) {
	t.Parallel()
	var version, calls atomic.Int32
	version.Store(1)
	loading, proceed := make(chan struct{}), make(chan struct{})
	c := newCache(time.Hour, func(ctx context.Context, tenant, id string) (int32, error) {
		v := version.Load()
		if calls.Add(1) == 1 {
			close(loading)
			<-proceed
		}
		return v, nil
	})
	ctx := context.Background()
	got := make(chan int32)
	go func() {
		v, _ := c.get(ctx, "x")
		got <- v
	}()
	<-loading
	version.Store(2)      // the object changes meanwhile,
	c.invalidate("", "x") // and the change is announced
	close(proceed)
	if v := <-got; v != 1 {
		t.Fatalf("the in-flight read got %d, want the 1 it loaded", v)
	}
	if v, _ := c.get(ctx, "x"); v != 2 {
		t.Fatalf("after the invalidation the cache serves %d, want 2", v)
	}
}
