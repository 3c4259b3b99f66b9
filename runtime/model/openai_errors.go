package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentc/agentc/vm"
)

// failure is one failed attempt, classified; the rest of this file decides
// whether and when to try again.
type failure struct {
	kind          vm.ErrorKind
	msg           string
	retryAfter    time.Duration
	hasRetryAfter bool
	streamed      bool // text had reached onDelta: retrying would repeat it
}

// classify maps an attempt's error: HTTP 429 → rate_limit; 5xx, a failed or
// cut connection → unavailable; 408 → timeout; other 4xx → model_error with
// the provider's message; an error event in the stream by its type; a chunk
// that is not JSON → model_error. httpResp is the response, when one came.
func (m *openAIModel) classify(err error, httpResp *http.Response) *failure {
	var aerr *openai.Error
	if errors.As(err, &aerr) {
		msg := aerr.Message
		if msg == "" && aerr.Response != nil {
			msg = bodySnippet(aerr.Response)
		}
		h := http.Header(nil)
		if aerr.Response != nil {
			h = aerr.Response.Header
		}
		return m.statusFailure(aerr.StatusCode, msg, h)
	}
	if httpResp != nil && httpResp.StatusCode >= 400 {
		// An error the client could not decode.
		return m.statusFailure(httpResp.StatusCode, bodySnippet(httpResp), httpResp.Header)
	}
	var serr *ssestream.StreamError
	if errors.As(err, &serr) {
		return m.streamErrorFailure(serr.Event.Data)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &failure{kind: vm.KindModelError, msg: "malformed stream chunk: " + redact(err.Error(), m.cfg.APIKey)}
	}
	what := "connection failed: "
	if httpResp != nil {
		what = "stream interrupted: "
	}
	return &failure{kind: vm.KindUnavailable, msg: what + redact(err.Error(), m.cfg.APIKey)}
}

func (m *openAIModel) statusFailure(status int, providerMsg string, h http.Header) *failure {
	f := &failure{kind: vm.KindModelError, msg: "HTTP " + strconv.Itoa(status)}
	if t := http.StatusText(status); t != "" {
		f.msg += " " + t
	}
	if providerMsg != "" {
		f.msg += ": " + redact(clip(providerMsg, 1000), m.cfg.APIKey)
	}
	switch {
	case status == http.StatusTooManyRequests:
		f.kind = vm.KindRateLimit
	case status >= 500:
		f.kind = vm.KindUnavailable
	case status == http.StatusRequestTimeout:
		f.kind = vm.KindTimeout
	}
	f.retryAfter, f.hasRetryAfter = m.retryAfter(h)
	return f
}

// streamErrorFailure classifies a `data: {"error": {...}}` event.
func (m *openAIModel) streamErrorFailure(data []byte) *failure {
	var ev struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	code := fmt.Sprint(ev.Error.Code)
	kind := vm.KindModelError
	switch {
	case strings.Contains(ev.Error.Type, "rate_limit") || strings.Contains(code, "rate_limit"):
		kind = vm.KindRateLimit
	case ev.Error.Type == "" || ev.Error.Type == "server_error" || strings.Contains(ev.Error.Type, "overloaded"):
		kind = vm.KindUnavailable
	}
	msg := ev.Error.Message
	if msg == "" {
		msg = string(data)
	}
	return &failure{kind: kind, msg: "error in stream: " + redact(clip(strings.TrimSpace(msg), 1000), m.cfg.APIKey)}
}

// retryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds,
// or an HTTP date when a clock is configured).
func (m *openAIModel) retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if m.cfg.Now != nil {
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(m.cfg.Now()), 0), true
		}
	}
	return 0, false
}

// retryWait decides whether to make another attempt after attempt number
// attempt (1-based) failed with f, and how long to wait first.
func (m *openAIModel) retryWait(f *failure, attempt int) (time.Duration, bool) {
	if f.streamed || attempt > m.cfg.MaxRetries {
		return 0, false
	}
	if f.kind != vm.KindRateLimit && f.kind != vm.KindUnavailable {
		return 0, false
	}
	if f.hasRetryAfter {
		if f.retryAfter > maxRetryAfter {
			return 0, false
		}
		return f.retryAfter, true
	}
	return backoff(m.cfg.MinBackoff, m.cfg.MaxBackoff, attempt, m.cfg.Rand), true
}

// backoff is min(hi, lo·2^(attempt-1)), scaled by rand() when given.
func backoff(lo, hi time.Duration, attempt int, rand func() float64) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	if rand != nil {
		r := rand()
		if r < 0 || r >= 1 || r != r {
			r = 0
		}
		d = time.Duration(float64(d) * r)
	}
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
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

// failed is the error Generate returns for the last failure.
func (m *openAIModel) failed(f *failure, attempts int) error {
	msg := m.what() + ": " + f.msg
	if attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", attempts)
	}
	if f.hasRetryAfter && f.retryAfter > maxRetryAfter {
		msg += fmt.Sprintf(" (provider asks to retry after %s)", f.retryAfter.Round(time.Second))
	}
	return &vm.Error{Kind: f.kind, Message: redact(msg, m.cfg.APIKey)}
}

// redact removes the API key from s, in case a provider or a URL echoes it.
func redact(s, key string) string {
	if len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// bodySnippet returns the start of an error response's body (which the
// client library has already read and put back), for an error without the
// {"error": {...}} envelope.
func bodySnippet(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}
