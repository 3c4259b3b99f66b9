package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server"
)

// rawConn dials addr and writes req (which may declare more body than it
// sends); the connection stays open until the test ends.
func rawConn(t *testing.T, addr, req string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// readStatus reads one response's status code within d (0 and the error
// when none came).
func readStatus(c net.Conn, d time.Duration) (int, string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func stalled(path, auth string, declared int, sent string) string {
	h := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", declared) + sent
}

func deadlineServer(t *testing.T, edit func(*server.Config)) serving {
	cfg := server.Config{
		Tokens:   map[string]string{"tok-a": "alice"},
		Mounts:   []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError}},
		Timeouts: server.Timeouts{BodyGrace: 300 * time.Millisecond, BodyMinRate: 1024, Body: 5 * time.Second},
	}
	b := backend(t)
	b.Limits.MaxBodyBytes = 1 << 20
	cfg.Backend = b
	if edit != nil {
		edit(&cfg)
	}
	return serve(t, cfg)
}

// TestSlowBody: a request is refused before its body is read when it is not
// authenticated, and an authenticated body that stalls is cut off once the
// rate floor's grace has passed — neither holds the connection.
func TestSlowBody(t *testing.T) {
	s := deadlineServer(t, nil)
	addr := strings.TrimPrefix(s.url, "http://")
	t.Run("unauthenticated is refused at once", func(t *testing.T) {
		start := time.Now()
		c := rawConn(t, addr, stalled("/p/x", "", 1000, "abcd"))
		code, body, err := readStatus(c, 3*time.Second)
		if err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "unauthorized") {
			t.Fatalf("got %d %q %v after %s, want a 401 at once", code, body, err, time.Since(start))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("401 after %s", d)
		}
	})
	t.Run("a stalled authenticated body gets 408", func(t *testing.T) {
		start := time.Now()
		c := rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 1000, "abcd"))
		code, body, err := readStatus(c, 4*time.Second)
		if err != nil || code != http.StatusRequestTimeout || !strings.Contains(body, "body_timeout") {
			t.Fatalf("got %d %q %v after %s, want 408", code, body, err, time.Since(start))
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("408 after %s", d)
		}
		// The server closed the connection.
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("connection still open (%d bytes)", n)
		}
	})
	t.Run("a body sent above the floor is read", func(t *testing.T) {
		body := strings.Repeat("x", 2000)
		c := rawConn(t, addr, stalled("/p/x", "Bearer tok-a", len(body), ""))
		for i := 0; i < len(body); i += 500 { // 500 B every 100 ms: 5 KiB/s
			time.Sleep(100 * time.Millisecond)
			if _, err := io.WriteString(c, body[i:i+500]); err != nil {
				t.Fatal(err)
			}
		}
		code, got, err := readStatus(c, 3*time.Second)
		if err != nil || code != 200 || got != "alice:"+body {
			t.Fatalf("got %d %.40q %v", code, got, err)
		}
	})
	t.Run("a body over the limit is refused before it is read", func(t *testing.T) {
		c := rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 2<<20, "abcd"))
		code, body, err := readStatus(c, 3*time.Second)
		if err != nil || code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "body_too_large") {
			t.Fatalf("got %d %q %v", code, body, err)
		}
	})
}

// TestStalledBodiesAreCapped: beyond MaxBodyReads bodies in flight, a
// request is answered 503 at once instead of joining the stalled ones.
func TestStalledBodiesAreCapped(t *testing.T) {
	s := deadlineServer(t, func(c *server.Config) {
		c.MaxBodyReads = 2
		c.Timeouts.BodyGrace = 3 * time.Second
	})
	addr := strings.TrimPrefix(s.url, "http://")
	var conns []net.Conn
	for range 2 {
		conns = append(conns, rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 1000, "ab")))
	}
	time.Sleep(200 * time.Millisecond) // both are reading their bodies
	c := rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 10, "0123456789"))
	code, body, err := readStatus(c, 2*time.Second)
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "busy") {
		t.Fatalf("third body: %d %q %v", code, body, err)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if code, _, err := readStatus(c, 6*time.Second); code != http.StatusRequestTimeout {
				t.Errorf("stalled body: %d %v", code, err)
			}
		})
	}
	wg.Wait()
	// The slots are free again.
	c = rawConn(t, addr, stalled("/p/x", "Bearer tok-a", 2, "ok"))
	if code, body, err := readStatus(c, 2*time.Second); code != 200 || body != "alice:ok" {
		t.Fatalf("after the stall: %d %q %v", code, body, err)
	}
}

// TestConnectionCap: connections beyond MaxConns are closed at once; the
// ones that never send a request end after the header timeout.
func TestConnectionCap(t *testing.T) {
	s := deadlineServer(t, func(c *server.Config) {
		c.MaxConns = 2
		c.Timeouts.Header = 500 * time.Millisecond
	})
	addr := strings.TrimPrefix(s.url, "http://")
	idle := []net.Conn{rawConn(t, addr, ""), rawConn(t, addr, "")}
	time.Sleep(100 * time.Millisecond)
	over := rawConn(t, addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if code, _, err := readStatus(over, 2*time.Second); err == nil {
		t.Fatalf("a third connection was served (%d)", code)
	}
	for _, c := range idle { // closed by the header timeout
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("idle connection not closed by the server: %v", err)
		}
	}
	c := rawConn(t, addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if code, _, err := readStatus(c, 2*time.Second); code != 200 {
		t.Fatalf("after the idle ones closed: %d %v", code, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestOpenModeRefusesCrossSite: an open server answers only requests for a
// loopback Host, from no Origin or a loopback one, and state-changing
// requests only with a JSON body (CSRF, DNS rebinding).
func TestOpenModeRefusesCrossSite(t *testing.T) {
	s := serve(t, server.Config{Open: true, Mounts: []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError}}})
	addr := strings.TrimPrefix(s.url, "http://")
	tests := []struct {
		name, method, host, origin, ctype string
		status                            int
		want                              string
	}{
		{"json from curl", "POST", addr, "", "application/json", 200, "anonymous:{}"},
		{"json from a local page", "POST", addr, "http://localhost:3000", "application/json; charset=utf-8", 200, "anonymous:{}"},
		{"localhost host", "POST", "localhost:8080", "", "application/json", 200, "anonymous:{}"},
		{"ipv6 loopback host", "POST", "[::1]:8080", "", "application/json", 200, "anonymous:{}"},
		{"get from a local page", "GET", addr, "http://127.0.0.1:5173", "", 200, "anonymous:"},
		{"rebound host", "POST", "evil.example:8080", "", "application/json", 403, "proto-error:forbidden"},
		{"rebound host, get", "GET", "evil.example", "", "", 403, "proto-error:forbidden"},
		{"rebound host that starts like localhost", "GET", "localhost.evil.example", "", "", 403, "proto-error:forbidden"},
		{"foreign origin", "POST", addr, "https://evil.example", "application/json", 403, "proto-error:forbidden"},
		{"null origin", "POST", addr, "null", "application/json", 403, "proto-error:forbidden"},
		{"text/plain form", "POST", addr, "", "text/plain", 415, "proto-error:unsupported_media_type"},
		{"urlencoded form", "POST", addr, "", "application/x-www-form-urlencoded", 415, "proto-error:unsupported_media_type"},
		{"no content type", "POST", addr, "", "", 415, "proto-error:unsupported_media_type"},
		{"bodiless delete (an MCP client ending its session)", "DELETE", addr, "", "", 200, "anonymous:"},
		{"delete from a foreign page", "DELETE", addr, "https://evil.example", "", 403, "proto-error:forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = "{}"
			}
			req, _ := http.NewRequest(tc.method, s.url+"/p/x", strings.NewReader(body))
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(b) != tc.want {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}

func TestNewRefusesOpenWithTokens(t *testing.T) {
	_, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: backend(t), Open: true, Tokens: map[string]string{"t": "u"}})
	if err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Fatalf("New: %v", err)
	}
}
