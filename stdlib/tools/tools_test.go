package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

func schemaJSON(t *testing.T, s map[string]any) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUniverseShapes checks that the tools here are exactly the stdlib
// table's Impl tools, with the table's JSON Schemas and effect, and that
// the universe checks their names.
func TestUniverseShapes(t *testing.T) {
	u := stdlib.Universe()
	table := map[string]Builtin{}
	for _, b := range Table() {
		table[b.Name] = b
	}
	tools := Builtins(Config{})
	for _, st := range stdlib.Tools() {
		b, ok := table[st.Name]
		if st.Kind != stdlib.Impl {
			if ok || u.Impls[st.Name] {
				t.Errorf("service tool %s is implemented here or named in Impls", st.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("stdlib Impl tool %s has no implementation here", st.Name)
			continue
		}
		if !u.Impls[st.Name] {
			t.Errorf("%s is not in the universe's Impls", st.Name)
		}
		if got, want := schemaJSON(t, tools[st.Name].Spec().InputSchema), schemaJSON(t, types.JSONSchema(st.Input)); got != want {
			t.Errorf("%s input schema = %s, table %s", st.Name, got, want)
		}
		if got, want := schemaJSON(t, types.JSONSchema(b.Output)), schemaJSON(t, types.JSONSchema(st.Output)); got != want {
			t.Errorf("%s output schema = %s, table %s", st.Name, got, want)
		}
		if b.Effect != st.Effect {
			t.Errorf("%s effect = %d, table %d", st.Name, b.Effect, st.Effect)
		}
	}
	for name := range impls {
		if st := stdlib.LookupTool(name); st == nil || st.Kind != stdlib.Impl {
			t.Errorf("%s is implemented here but is no Impl tool of the stdlib table", name)
		}
	}
	if len(tools) != len(impls) {
		t.Errorf("Builtins has %d tools, impls %d", len(tools), len(impls))
	}
	for name, tl := range tools {
		if tl.Spec().Name != name || tl.Spec().Description == "" || tl.Effect() != runtime.ReadOnly {
			t.Errorf("%s: spec %+v effect %d", name, tl.Spec(), tl.Effect())
		}
	}
}

// TestSupportExample compiles examples/support with the stdlib universe and checks that
// cert_scan (run = builtin.tls_chain) declares the shapes tls_chain has.
func TestSupportExample(t *testing.T) {
	cfg := compiler.Config{FS: os.DirFS("../../examples"), Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, "support/support.agent")
	for _, d := range ds {
		t.Fatalf("load: %v", d)
	}
	p, _, ds := compiler.Compile(cfg, pkg)
	for _, d := range ds {
		if d.Severity.String() == "error" {
			t.Fatalf("compile: %v", d)
		}
	}
	var tb Builtin
	for _, b := range Table() {
		if b.Name == "tls_chain" {
			tb = b
		}
	}
	found := false
	for _, tl := range p.Tools {
		if tl.Impl.Kind != bytecode.ImplBuiltin || tl.Impl.Builtin != "tls_chain" {
			continue
		}
		found = true
		if got, want := schemaJSON(t, types.JSONSchema(p.Types[tl.Input])), schemaJSON(t, types.JSONSchema(tb.Input)); got != want {
			t.Errorf("%s input %s, tls_chain %s", tl.Name, got, want)
		}
		if got, want := schemaJSON(t, types.JSONSchema(p.Types[tl.Output])), schemaJSON(t, types.JSONSchema(tb.Output)); got != want {
			t.Errorf("%s output %s, tls_chain %s", tl.Name, got, want)
		}
	}
	if !found {
		t.Fatal("no tool uses builtin.tls_chain")
	}
}

func call(t *testing.T, cfg Config, name string, args any) (json.RawMessage, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tl := Builtins(cfg)[name]
	if tl == nil {
		t.Fatalf("no tool %s", name)
	}
	return tl.Call(context.Background(), runtime.ToolRequest{CallID: "c1", Args: b})
}

func wantKind(t *testing.T, err error, kind vm.ErrorKind, sub string) {
	t.Helper()
	var ve *vm.Error
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *vm.Error %s", err, kind)
	}
	if ve.Kind != kind || !strings.Contains(ve.Message, sub) {
		t.Fatalf("err = %s %q, want %s containing %q", ve.Kind, ve.Message, kind, sub)
	}
}

func TestHTTPGet(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(201)
			_, _ = w.Write([]byte("hello"))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 100)))
		case "/redirect":
			http.Redirect(w, r, "http://evil.example/", http.StatusFound)
		case "/slow":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(block)

	cfg := Config{AllowHosts: []string{"127.0.0.1:*"}, MaxBytes: 10, Timeout: 2 * time.Second}
	out, err := call(t, cfg, "http_get", map[string]any{"url": srv.URL + "/ok"})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Status      int    `json:"status"`
		Body        string `json:"body"`
		ContentType string `json:"content_type"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != 201 || res.Body != "hello" || res.ContentType != "text/plain" {
		t.Fatalf("got %s", out)
	}

	out, err = call(t, cfg, "http_get", map[string]any{"url": srv.URL + "/big"})
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(out, &res)
	if res.Body != strings.Repeat("x", 10) {
		t.Fatalf("capped body = %q", res.Body)
	}

	_, err = call(t, Config{}, "http_get", map[string]any{"url": srv.URL + "/ok"})
	wantKind(t, err, vm.KindToolError, `"127.0.0.1" is not allowed`)

	_, err = call(t, cfg, "http_get", map[string]any{"url": srv.URL + "/redirect"})
	wantKind(t, err, vm.KindToolError, `"evil.example" is not allowed`)

	_, err = call(t, cfg, "http_get", map[string]any{"url": "file:///etc/passwd"})
	wantKind(t, err, vm.KindToolError, "not an http(s) URL")

	short := cfg
	short.Timeout = 50 * time.Millisecond
	_, err = call(t, short, "http_get", map[string]any{"url": srv.URL + "/slow"})
	wantKind(t, err, vm.KindTimeout, "")

	// a closed port: unavailable
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = call(t, cfg, "http_get", map[string]any{"url": "http://" + addr + "/"})
	wantKind(t, err, vm.KindUnavailable, "")
}

func TestHTTPGetInjectedDialer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Host))
	}))
	defer srv.Close()
	var d net.Dialer
	dialed := ""
	cfg := Config{AllowHosts: []string{"*.example.test"}, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = addr
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	out, err := call(t, cfg, "http_get", map[string]any{"url": "http://api.example.test/"})
	if err != nil {
		t.Fatal(err)
	}
	if dialed != "api.example.test:80" || !strings.Contains(string(out), `"body":"api.example.test"`) {
		t.Fatalf("dialed %q, got %s", dialed, out)
	}
}

func TestHostAllowed(t *testing.T) {
	allow := []string{"api.example.com", "*.corp.test", "127.0.0.1"}
	for host, want := range map[string]bool{
		"api.example.com":   true,
		"API.Example.com.":  true,
		"example.com":       false,
		"x.api.example.com": false,
		"a.corp.test":       true,
		"a.b.corp.test":     true,
		"corp.test":         false,
		"evilcorp.test":     false,
		"127.0.0.1":         true,
		"":                  false,
	} {
		// A bare host name means the scheme's default port (TestAllowlistPorts).
		if got := hostAllowed(allow, &url.URL{Scheme: "https", Host: host}); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	if hostAllowed(nil, &url.URL{Scheme: "https", Host: "api.example.com"}) {
		t.Error("empty allowlist allowed a host")
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	outside := filepath.Join(dir, "secret.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "sub", "b.txt"), []byte("beta"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("z", 64)), 0o644))
	must(os.WriteFile(outside, []byte("secret"), 0o644))
	must(os.Symlink(outside, filepath.Join(ws, "leak.txt")))
	must(os.Symlink(dir, filepath.Join(ws, "up")))
	must(os.Symlink("sub/b.txt", filepath.Join(ws, "inner.txt")))
	cfg := Config{Workspace: ws, MaxBytes: 32}

	for path, want := range map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "sub/../a.txt": "alpha", "inner.txt": "beta"} {
		out, err := call(t, cfg, "read_file", map[string]any{"path": path})
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		var s string
		_ = json.Unmarshal(out, &s)
		if s != want {
			t.Errorf("read %s = %q", path, s)
		}
	}
	for path, sub := range map[string]string{
		outside:         "absolute",
		"../secret.txt": "leaves the workspace",
		"sub/../../x":   "leaves the workspace",
		"leak.txt":      "leaves the workspace",
		"up/secret.txt": "leaves the workspace",
		"big.txt":       "cap",
		"nope.txt":      "does not exist",
		"sub":           "not a regular file",
	} {
		_, err := call(t, cfg, "read_file", map[string]any{"path": path})
		wantKind(t, err, vm.KindToolError, sub)
	}
	_, err := call(t, Config{}, "read_file", map[string]any{"path": "a.txt"})
	wantKind(t, err, vm.KindToolError, "no workspace")

	out, err := call(t, cfg, "list_dir", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var ents []workspace.Entry
	must(json.Unmarshal(out, &ents))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if want := []string{"a.txt", "big.txt", "inner.txt", "leak.txt", "sub", "up"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("list_dir = %v, want %v", names, want)
	}
	if ents[0].Size != 5 || !ents[4].Dir {
		t.Fatalf("list_dir = %s", out)
	}
	out, err = call(t, cfg, "list_dir", map[string]any{"path": "sub"})
	if err != nil || string(out) != `[{"name":"b.txt","dir":false,"size":4}]` {
		t.Fatalf("list_dir sub = %s, %v", out, err)
	}
	for _, path := range []string{"..", "up", "/"} {
		_, err := call(t, cfg, "list_dir", map[string]any{"path": path})
		wantKind(t, err, vm.KindToolError, "")
	}
}

func TestJSONQuery(t *testing.T) {
	value := json.RawMessage(`{"a":{"b":[{"c":1},{"c":"two"}]},"k y":true,"list":[10,20]}`)
	for _, tc := range []struct{ path, want string }{
		{"a.b[0].c", `1`},
		{"$.a.b[1].c", `"two"`},
		{"a.b[5].c", `null`},
		{"missing", `null`},
		{`$["k y"]`, `true`},
		{"list[1]", `20`},
		{"$", string(value)},
		{"", string(value)},
	} {
		out, err := call(t, Config{}, "json_query", map[string]any{"value": value, "path": tc.path})
		if err != nil {
			t.Errorf("%q: %v", tc.path, err)
			continue
		}
		var got, want any
		_ = json.Unmarshal(out, &got)
		_ = json.Unmarshal([]byte(tc.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q = %s, want %s", tc.path, out, tc.want)
		}
	}
	_, err := call(t, Config{}, "json_query", map[string]any{"value": value, "path": "a[x"})
	wantKind(t, err, vm.KindToolError, "malformed")
}

type fakeClock time.Time

func (c fakeClock) Now() time.Time { return time.Time(c) }

func TestNow(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("X", 3600))
	out, err := call(t, Config{Clock: fakeClock(at)}, "now", map[string]any{})
	if err != nil || string(out) != `"2026-03-01T11:30:00Z"` {
		t.Fatalf("now = %s, %v", out, err)
	}
	_, err = call(t, Config{}, "now", nil)
	wantKind(t, err, vm.KindUnavailable, "clock")
}

func TestTLSChain(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var p int
	p, _ = strconv.Atoi(port)
	out, err := call(t, Config{Timeout: 5 * time.Second}, "tls_chain", map[string]any{"host": host, "port": p})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Chain   []string `json:"chain"`
		Expires string   `json:"expires"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	leaf := srv.Certificate()
	if len(res.Chain) == 0 || res.Chain[0] != leaf.Subject.String() || res.Expires != leaf.NotAfter.UTC().Format(time.RFC3339) {
		t.Fatalf("got %s, leaf %s %s", out, leaf.Subject, leaf.NotAfter)
	}

	// port defaults to 443: the injected dialer sees it
	dialed := ""
	var d net.Dialer
	cfg := Config{Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = addr
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	if _, err := call(t, cfg, "tls_chain", map[string]any{"host": "prod.example.com"}); err != nil || dialed != "prod.example.com:443" {
		t.Fatalf("dialed %q: %v", dialed, err)
	}

	// a server that accepts but never speaks: timeout
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	h, pt, _ := net.SplitHostPort(l.Addr().String())
	p, _ = strconv.Atoi(pt)
	_, err = call(t, Config{Timeout: 50 * time.Millisecond}, "tls_chain", map[string]any{"host": h, "port": p})
	wantKind(t, err, vm.KindTimeout, "")

	// refused: unavailable
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	_, pt, _ = net.SplitHostPort(l2.Addr().String())
	l2.Close()
	p, _ = strconv.Atoi(pt)
	_, err = call(t, Config{Timeout: time.Second}, "tls_chain", map[string]any{"host": "127.0.0.1", "port": p})
	wantKind(t, err, vm.KindUnavailable, "")
}

func TestBind(t *testing.T) {
	scripted := Builtins(Config{})["now"]
	into := map[string]runtime.Tool{"replayed": scripted}
	declared := []bytecode.Tool{
		{Name: "cert_scan", Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "tls_chain"}},
		{Name: "replayed", Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "http_get"}},
		{Name: "now", Impl: bytecode.ToolImpl{Kind: bytecode.ImplHTTP}},
		{Name: "odd", Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "nope"}},
	}
	unknown := Bind(into, declared, Config{})
	if !reflect.DeepEqual(unknown, []string{"nope"}) {
		t.Errorf("unknown = %v", unknown)
	}
	if into["cert_scan"] == nil || into["cert_scan"].Spec().Name != "tls_chain" {
		t.Errorf("cert_scan not bound to tls_chain")
	}
	if into["replayed"] != scripted || into["now"] != nil || into["odd"] != nil || len(into) != 2 {
		t.Errorf("into = %v", into)
	}
}
