package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/agentc/agentc/runtime/outbound"
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
// that is not JSON, or of the wrong shape → model_error; a request the
// client library refused to send → model_error.
func (m *openAIModel) classify(err error, ex *exchange) *failure {
	var aerr *openai.APIError
	if ex.resp != nil && failedStatus(ex.resp.StatusCode) {
		msg := ""
		if errors.As(err, &aerr) {
			msg = aerr.Message
		}
		if msg == "" {
			msg = outbound.Snippet(ex.errBody, 512)
		}
		return m.statusFailure(ex.resp.StatusCode, msg, ex.resp.Header)
	}
	if errors.As(err, &aerr) {
		// A `data: {"error": {...}}` event in a stream that began with 200.
		return m.streamErrorFailure(aerr)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &failure{kind: vm.KindModelError, msg: "malformed stream chunk: " + redact(err.Error(), m.cfg.APIKey)}
	}
	if !ex.sent {
		return &failure{kind: vm.KindModelError, msg: "request not sent: " + redact(err.Error(), m.cfg.APIKey)}
	}
	what := "connection failed: "
	if ex.resp != nil {
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
	if kind, ok := outbound.Transient(status); ok {
		f.kind = kind
	} else if status == http.StatusRequestTimeout {
		f.kind = vm.KindTimeout
	}
	f.retryAfter, f.hasRetryAfter = m.retryAfter(h)
	return f
}

// streamErrorFailure classifies an error event: rate_limit by its type or
// code, unavailable for a server error or none given, else model_error.
func (m *openAIModel) streamErrorFailure(e *openai.APIError) *failure {
	code := fmt.Sprint(e.Code)
	kind := vm.KindModelError
	switch {
	case strings.Contains(e.Type, "rate_limit") || strings.Contains(code, "rate_limit"):
		kind = vm.KindRateLimit
	case e.Type == "" || e.Type == "server_error" || strings.Contains(e.Type, "overloaded"):
		kind = vm.KindUnavailable
	}
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = fmt.Sprintf("no message (type %q, code %s)", e.Type, code)
	}
	return &failure{kind: kind, msg: "error in stream: " + redact(clip(msg, 1000), m.cfg.APIKey)}
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
	return outbound.Backoff(m.cfg.MinBackoff, m.cfg.MaxBackoff, attempt, m.cfg.Rand), true
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
