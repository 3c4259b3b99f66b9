package tools

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentc/agentc/vm"
)

func TestHTTPFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			_, _ = w.Write([]byte("<p>hello</p>"))
		case "/missing":
			http.Error(w, "no such page\nsecond line", http.StatusNotFound)
		case "/busy":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/down":
			w.WriteHeader(http.StatusBadGateway)
		case "/long":
			http.Error(w, strings.Repeat("é", 300), http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	cfg := Config{AllowHosts: []string{"127.0.0.1:*"}}

	out, err := call(t, cfg, "http_fetch", map[string]any{"url": srv.URL + "/page"})
	var page string
	if err != nil || json.Unmarshal(out, &page) != nil || page != "<p>hello</p>" {
		t.Fatalf("page = %s, %v", out, err)
	}
	for _, tc := range []struct {
		path string
		kind vm.ErrorKind
		sub  string
	}{
		{"/missing", vm.KindToolError, "HTTP 404: no such page"},
		{"/busy", vm.KindRateLimit, "HTTP 429"},
		{"/down", vm.KindUnavailable, "HTTP 502"},
	} {
		_, err := call(t, cfg, "http_fetch", map[string]any{"url": srv.URL + tc.path})
		wantKind(t, err, tc.kind, tc.sub)
		if err != nil && strings.Contains(err.Error(), "second line") {
			t.Errorf("%s: error carries more than the first line: %v", tc.path, err)
		}
	}
	_, err = call(t, cfg, "http_fetch", map[string]any{"url": srv.URL + "/long"})
	wantKind(t, err, vm.KindToolError, "HTTP 400")
	if err != nil && (len(err.Error()) > 300 || !strings.Contains(err.Error(), "é")) {
		t.Errorf("long body error = %d bytes: %v", len(err.Error()), err)
	}

	// The allowlist and the URL checks are http_get's.
	_, err = call(t, Config{}, "http_fetch", map[string]any{"url": srv.URL + "/page"})
	wantKind(t, err, vm.KindToolError, `"127.0.0.1" is not allowed`)
}
