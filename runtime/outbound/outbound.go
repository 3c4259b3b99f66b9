// Package outbound is what agentc's clients of remote HTTP servers share
// (declared http tools and http_get, the model provider, A2A push
// notifications, MCP servers over HTTP): the check of a configured URL,
// the classification of a failed status, exponential backoff between
// attempts, and the start of a reply quoted in an error.
package outbound

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentc/agentc/vm"
)

// HTTPURL parses raw as an absolute http or https URL with a host; ok is
// false for anything else (the caller words the refusal).
func HTTPURL(raw string) (u *url.URL, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// Reply is a response whose body was read, up to a cap, and closed.
type Reply struct {
	StatusCode int
	Status     string // "200 OK", as http.Response has it
	Header     http.Header
	Body       []byte // at most the cap
	Over       bool   // the body was longer than the cap
}

// Do sends req with client and reads at most max bytes of the reply's
// body, closing it. Without a reply it returns the client's error; with
// one whose body could not be read to the end or the cap, the Reply (what
// was read) and the read's error.
func Do(client *http.Client, req *http.Request, max int64) (*Reply, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	rep := &Reply{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: body}
	if int64(len(body)) > max {
		rep.Body, rep.Over = body[:max], true
	}
	return rep, err
}

// Transient classifies a failed status that a later attempt may pass:
// 429 is rate_limit, 5xx unavailable; ok is false for any other status.
func Transient(status int) (kind vm.ErrorKind, ok bool) {
	switch {
	case status == http.StatusTooManyRequests:
		return vm.KindRateLimit, true
	case status >= 500:
		return vm.KindUnavailable, true
	}
	return "", false
}

// Backoff is the wait after failed attempt number attempt (1-based):
// lo·2^(attempt-1), at most hi (hi ≤ 0: no cap), scaled by rand() when
// rand is given ("full jitter"; a value outside [0, 1) counts as 0).
func Backoff(lo, hi time.Duration, attempt int, rand func() float64) time.Duration {
	d := lo
	for i := 1; i < attempt && (hi <= 0 || d < hi) && d <= time.Duration(1)<<61; i++ {
		d *= 2
	}
	if hi > 0 {
		d = min(d, hi)
	}
	if rand != nil {
		r := rand()
		if r < 0 || r >= 1 || r != r {
			r = 0
		}
		d = time.Duration(float64(d) * r)
	}
	return d
}

// Sleep waits d or until ctx ends, whichever is first, and returns ctx's
// error in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Snippet is the start of a reply body (or of a command's output) for an
// error message: valid UTF-8, one line, at most n bytes.
func Snippet(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
}
