package server_test

import (
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server"
)

// TestMeasureStalledBodies (AGENTC_MEASURE=1): 200 authenticated requests
// that declare 1000 bytes and send 4, with the default deadlines.
func TestMeasureStalledBodies(t *testing.T) {
	if os.Getenv("AGENTC_MEASURE") == "" {
		t.Skip("AGENTC_MEASURE=1")
	}
	s := serve(t, serverConfigDefaults(t))
	addr := strings.TrimPrefix(s.url, "http://")
	start := time.Now()
	var mu sync.Mutex
	codes := map[int]int{}
	var last time.Duration
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			c := rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 1000, "abcd"))
			code, _, _ := readStatus(c, 30*time.Second)
			mu.Lock()
			codes[code]++
			last = max(last, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("200 stalled bodies: statuses %v, the last answered after %s", codes, last)
	if codes[http.StatusRequestTimeout]+codes[http.StatusServiceUnavailable] != 200 {
		t.Fatalf("statuses %v", codes)
	}
}

func serverConfigDefaults(t *testing.T) server.Config {
	b := backend(t)
	b.Limits.MaxBodyBytes = 1 << 20
	return server.Config{Backend: b, Tokens: map[string]string{"tok-a": "alice"},
		Mounts: []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError}}}
}
