package a2a_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store/memory"
)

// fetchCard gets the card with extra headers; the request's Host is host
// when set.
func fetchCard(t *testing.T, e *env, host string, headers ...string) (map[string]any, http.Header) {
	t.Helper()
	req := httptestRequest(t, e.srv.URL+a2a.CardPath)
	if host != "" {
		req.Host = host
	}
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c, resp.Header
}

// TestCardPoisoning: a client that is not a configured proxy cannot put
// its own host into the card through X-Forwarded-Host (or Host), and an
// answer that depends on the request's host is never cacheable by shared
// caches.
func TestCardPoisoning(t *testing.T) {
	forged := []string{"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https"}
	t.Run("public URL configured", func(t *testing.T) {
		e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.PublicURL = "https://agents.example.com/" })
		c, h := fetchCard(t, e, "evil.example", forged...)
		if got := str(t, c, "supportedInterfaces", 0, "url"); got != "https://agents.example.com/a2a" {
			t.Fatalf("url %q", got)
		}
		if h.Get("Vary") != "A2A-Version" || h.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("headers %v", h)
		}
	})
	t.Run("listen address", func(t *testing.T) {
		e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.ListenAddr = "127.0.0.1:8080" })
		c, h := fetchCard(t, e, "evil.example", forged...)
		if got := str(t, c, "supportedInterfaces", 0, "url"); got != "http://127.0.0.1:8080/a2a" {
			t.Fatalf("url %q", got)
		}
		if strings.Contains(h.Get("Cache-Control"), "private") {
			t.Fatalf("headers %v", h)
		}
	})
	t.Run("forwarded headers from an untrusted client", func(t *testing.T) {
		e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} })
		c, h := fetchCard(t, e, "", forged...)
		if got := str(t, c, "supportedInterfaces", 0, "url"); strings.Contains(got, "evil") || !strings.HasPrefix(got, "http://127.0.0.1:") {
			t.Fatalf("url %q", got)
		}
		if cc := h.Get("Cache-Control"); strings.Contains(cc, "public") {
			t.Fatalf("a host-dependent card is %q", cc)
		}
	})
	t.Run("a forged Host", func(t *testing.T) {
		e := newEnv(t, memory.New())
		c, h := fetchCard(t, e, "evil.example")
		if got := str(t, c, "supportedInterfaces", 0, "url"); got != "http://evil.example/a2a" {
			t.Fatalf("url %q", got) // the client's own answer, which no shared cache keeps
		}
		if cc := h.Get("Cache-Control"); strings.Contains(cc, "public") {
			t.Fatalf("a host-dependent card is %q", cc)
		}
	})
	t.Run("forwarded headers from a trusted proxy", func(t *testing.T) {
		e := newEnvWith(t, memory.New(), func(o *a2a.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
		c, h := fetchCard(t, e, "", forged...)
		if got := str(t, c, "supportedInterfaces", 0, "url"); got != "https://evil.example/a2a" {
			t.Fatalf("url %q", got)
		}
		if !strings.Contains(h.Get("Vary"), "X-Forwarded-Host") || strings.Contains(h.Get("Cache-Control"), "public") {
			t.Fatalf("headers %v", h)
		}
		c, _ = fetchCard(t, e, "", "X-Forwarded-Host", "evil.example/path@x")
		if got := str(t, c, "supportedInterfaces", 0, "url"); strings.Contains(got, "evil") {
			t.Fatalf("a malformed forwarded host was used: %q", got)
		}
	})
}

// TestServerErrorsAreJSONRPC: what the server answers itself in front of
// the A2A endpoint (401, 413, a stalled body's 408) is a JSON-RPC response.
func TestServerErrorsAreJSONRPC(t *testing.T) {
	e := newEnv(t, memory.New())
	e.backend.Limits.MaxBodyBytes = 256
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: e.backend, Tokens: map[string]string{"tok": "ana"},
		Mounts: e.h.Mounts(), Timeouts: server.Timeouts{BodyGrace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = l.Close() })
	addr := l.Addr().String()
	tests := []struct {
		name, auth string
		declared   int
		sent       string
		status     int
	}{
		{"no token", "", 10, `{"id":1}  `, http.StatusUnauthorized},
		{"too large", "Bearer tok", 4096, "", http.StatusRequestEntityTooLarge},
		{"stalled", "Bearer tok", 100, "{", http.StatusRequestTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := "POST /a2a HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"
			if tc.auth != "" {
				req += "Authorization: " + tc.auth + "\r\n"
			}
			fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n%s", req, tc.declared, tc.sent)
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			var r rpcResp
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(b, &r) != nil || r.JSONRPC != "2.0" || string(r.ID) != "null" || r.Error == nil || r.Error.Code == 0 {
				t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		})
	}
}

// TestIDSanitised: an id that is not valid UTF-8 is echoed with the bad
// bytes replaced; an overlong one is refused (and not echoed).
func TestIDSanitised(t *testing.T) {
	e := newEnv(t, memory.New())
	body := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"GetTask","params":{"id":"task_nope"}}`)
	}
	resp := e.post("ana", "1.0", body("\"a\xffb\""))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r rpcResp
	if err := json.Unmarshal(b, &r); err != nil || string(r.ID) != "\"a\uFFFDb\"" || r.Error == nil || r.Error.Code != -32001 {
		t.Fatalf("invalid UTF-8 id: %q (%v)", b, err)
	}
	for _, id := range []string{`"` + strings.Repeat("x", 300) + `"`, strings.Repeat("9", 300)} {
		r := e.raw("ana", "1.0", body(id))
		if string(r.ID) != "null" || r.Error == nil || r.Error.Code != -32600 {
			t.Fatalf("long id echoed as %.40s (%+v)", r.ID, r.Error)
		}
	}
}
