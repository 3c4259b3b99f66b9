package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/agentc/agentc/vm"
)

// hostPort is a test server's host:port.
func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestRedirectDropsCredentials: a redirect to another port of the same
// host (another origin) carries neither the Authorization header, nor the
// tool's secret headers, nor cookies; one to the same origin keeps them.
func TestRedirectDropsCredentials(t *testing.T) {
	got := make(chan http.Header, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, `"ok"`)
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/landed", http.StatusFound)
		default:
			got <- r.Header.Clone()
			io.WriteString(w, `"ok"`)
		}
	}))
	defer first.Close()
	src := fmt.Sprintf(`tool go "g" {
  input  { p: string }
  run    = http { url = "%s/{input.p}", headers = { Authorization: "Bearer {env("TOKEN")}", "X-Api-Key": env("API_KEY"), Cookie: "session=s3cr3t" } }
  effect = read_only
}`, first.URL)
	cfg := Config{AllowHosts: []string{hostPort(t, first), hostPort(t, other)}, MaxBytes: 4096}
	tl := declaredTools(t, src, cfg, map[string]string{"TOKEN": "tok-SECRET", "API_KEY": "key-SECRET"})
	if _, err := callTool(t, tl["go"], `{"p": "away"}`); err != nil {
		t.Fatal(err)
	}
	h := <-got
	for _, k := range []string{"Authorization", "X-Api-Key", "Cookie"} {
		if v := h.Get(k); v != "" {
			t.Errorf("the redirect to another port carried %s: %q", k, v)
		}
	}
	if _, err := callTool(t, tl["go"], `{"p": "here"}`); err != nil {
		t.Fatal(err)
	}
	h = <-got
	if h.Get("Authorization") != "Bearer tok-SECRET" || h.Get("X-Api-Key") != "key-SECRET" {
		t.Errorf("a same-origin redirect lost the credentials: %v", h)
	}
}

// TestAllowlistPorts: entries match host and port.
func TestAllowlistPorts(t *testing.T) {
	allow := []string{"api.example.com", "*.corp.test:8443", "127.0.0.1:8080", "[::1]:9000", "dev.test:*"}
	for raw, want := range map[string]bool{
		"https://api.example.com/x":      true,
		"http://api.example.com/x":       true,
		"https://api.example.com:443/x":  true,
		"https://api.example.com:8443/x": false,
		"http://api.example.com:443/x":   false,
		"https://a.corp.test:8443/":      true,
		"https://a.corp.test/":           false,
		"http://127.0.0.1:8080/":         true,
		"http://127.0.0.1:8081/":         false,
		"http://127.0.0.1/":              false,
		"http://[::1]:9000/":             true,
		"http://[::1]:9001/":             false,
		"http://dev.test:1234/":          true,
	} {
		u, _ := url.Parse(raw)
		if got := hostAllowed(allow, u); got != want {
			t.Errorf("hostAllowed(%s) = %v, want %v", raw, got, want)
		}
	}
}

// TestTemplateInjection: an input value fills only the position its
// interpolation holds: a path segment, a query value, a header value, a
// string in a JSON body.
func TestTemplateInjection(t *testing.T) {
	type req struct {
		rawPath, query, body string
		header               http.Header
	}
	got := make(chan req, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- req{r.URL.EscapedPath(), r.URL.RawQuery, string(b), r.Header.Clone()}
		io.WriteString(w, `{"ok": true}`)
	}))
	defer srv.Close()
	src := fmt.Sprintf(`
tool status "s" {
  input  { service: string }
  output json
  run    = http { url = "%[1]s/v1/status/{input.service}/errors", headers = { Authorization: "Bearer t", "X-Trace": "{input.service}" } }
  effect = read_only
}
tool search "q" {
  input  { q: string }
  output json
  run    = http { url = "%[1]s/v1/search?q={input.q}&limit=5" }
  effect = read_only
}
tool note "n" {
  input  { text: string }
  output json
  run    = http { method = POST, url = "%[1]s/v1/note", body = { text: "note: {input.text}", n: 2 } }
}
tool fetch "f" {
  input  { url: string }
  output json
  run    = http { url = "{input.url}" }
  effect = read_only
}
tool shout "u" {
  input  { service: string }
  output json
  run    = http { url = "%[1]s/v1/{upper(input.service)}" }
  effect = read_only
}
`, srv.URL)
	cfg := Config{AllowHosts: []string{hostPort(t, srv)}, MaxBytes: 4096}
	tl := declaredTools(t, src, cfg, nil)

	if _, err := callTool(t, tl["status"], `{"service": "../../admin/delete?all=1#"}`); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.rawPath != "/v1/status/..%2F..%2Fadmin%2Fdelete%3Fall=1%23/errors" || r.query != "" {
		t.Errorf("path %q query %q", r.rawPath, r.query)
	}
	for _, bad := range []string{"..", "."} {
		_, err := callTool(t, tl["status"], `{"service": "`+bad+`"}`)
		wantKind(t, err, vm.KindToolError, "path segment")
	}
	_, err := callTool(t, tl["status"], `{"service": "x\r\nX-Evil: 1"}`)
	wantKind(t, err, vm.KindToolError, "X-Trace")

	if _, err := callTool(t, tl["search"], `{"q": "a&admin=1 b#c"}`); err != nil {
		t.Fatal(err)
	}
	r = <-got
	q, _ := url.ParseQuery(r.query)
	if q.Get("q") != "a&admin=1 b#c" || q.Get("limit") != "5" || q.Has("admin") {
		t.Errorf("query %q", r.query)
	}

	if _, err := callTool(t, tl["note"], `{"text": "x\", \"n\": 99, \"y\": \""}`); err != nil {
		t.Fatal(err)
	}
	r = <-got
	var body struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.N != 2 || body.Text != `note: x", "n": 99, "y": "` {
		t.Errorf("body %s (%v)", r.body, err)
	}

	// A whole URL from the input is taken as it is (the allowlist applies).
	if _, err := callTool(t, tl["fetch"], `{"url": "`+srv.URL+`/a/b?c=d"}`); err != nil {
		t.Fatal(err)
	}
	if r = <-got; r.rawPath != "/a/b" || r.query != "c=d" {
		t.Errorf("fetch %+v", r)
	}

	// A value changed by an expression cannot be placed: refused.
	_, err = callTool(t, tl["shout"], `{"service": "a/../b"}`)
	wantKind(t, err, vm.KindToolError, "input.service")
	if len(got) != 0 {
		t.Errorf("a refused call sent a request")
	}
}
