package outbound

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/vm"
)

func TestBackoff(t *testing.T) {
	lo, hi := 500*time.Millisecond, 8*time.Second
	for attempt, want := range []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if attempt == 0 {
			continue
		}
		if got := Backoff(lo, hi, attempt, nil); got != want {
			t.Errorf("Backoff(attempt %d) = %v, want %v", attempt, got, want)
		}
	}
	if got := Backoff(lo, hi, 100, func() float64 { return 0.25 }); got != 2*time.Second {
		t.Errorf("jittered = %v", got)
	}
	if got := Backoff(lo, hi, 1, func() float64 { return 7 }); got != 0 {
		t.Errorf("out-of-range rand = %v", got)
	}
}

func TestBackoffUncapped(t *testing.T) {
	if got := Backoff(time.Second, 0, 4, nil); got != 8*time.Second {
		t.Errorf("Backoff(1s, no cap, attempt 4) = %v, want 8s", got)
	}
	if got := Backoff(time.Second, 0, 1000, nil); got <= 0 {
		t.Errorf("Backoff(1s, no cap, attempt 1000) = %v, want a positive wait", got)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled sleep: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("zero sleep on a canceled context: %v", err)
	}
}

func TestHTTPURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://api.example/v1": true,
		"http://127.0.0.1:8080":  true,
		"ftp://host/x":           false,
		"https://":               false,
		"/relative":              false,
		"http://a b":             false,
	} {
		if u, ok := HTTPURL(raw); ok != want || (ok && u.Host == "") {
			t.Errorf("HTTPURL(%q) = %v, %v; want ok %v", raw, u, ok, want)
		}
	}
}

func TestTransient(t *testing.T) {
	tests := []struct {
		status int
		kind   vm.ErrorKind
		ok     bool
	}{
		{http.StatusTooManyRequests, vm.KindRateLimit, true},
		{http.StatusInternalServerError, vm.KindUnavailable, true},
		{http.StatusServiceUnavailable, vm.KindUnavailable, true},
		{http.StatusRequestTimeout, "", false},
		{http.StatusNotFound, "", false},
		{http.StatusFound, "", false},
	}
	for _, tc := range tests {
		if kind, ok := Transient(tc.status); kind != tc.kind || ok != tc.ok {
			t.Errorf("Transient(%d) = %q, %v; want %q, %v", tc.status, kind, ok, tc.kind, tc.ok)
		}
	}
}

func TestSnippet(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"  upstream\n\tdown  ", 100, "upstream down"},
		{"abcdef", 3, "abc"},
		{"h\u00e9llo", 2, "h"}, // the cut splits é: its first byte goes
		{"bad \xff byte", 100, "bad \ufffd byte"},
		{"", 10, ""},
	}
	for _, tc := range tests {
		if got := Snippet([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("Snippet(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(strings.Repeat("x", 10)))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		max  int64
		body string
		over bool
	}{{100, "xxxxxxxxxx", false}, {10, "xxxxxxxxxx", false}, {4, "xxxx", true}} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Do(srv.Client(), req, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if rep.StatusCode != http.StatusTeapot || rep.Status != "418 I'm a teapot" || rep.Header.Get("X-Test") != "yes" ||
			string(rep.Body) != tc.body || rep.Over != tc.over {
			t.Errorf("Do(max %d) = %+v; want 418, body %q, over %v", tc.max, rep, tc.body, tc.over)
		}
	}
	srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if rep, err := Do(http.DefaultClient, req, 10); rep != nil || err == nil {
		t.Errorf("Do to a closed server = %v, %v; want no reply and the client's error", rep, err)
	}
}
