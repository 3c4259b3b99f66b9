package model

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// roundTrip answers every request with status and body, without a network.
type roundTrip struct {
	status int
	header http.Header
	body   []byte
}

func (rt roundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := rt.header.Clone()
	if h == nil {
		h = http.Header{"Content-Type": {"text/event-stream"}}
	}
	return &http.Response{StatusCode: rt.status, Status: http.StatusText(rt.status), Header: h,
		Body: io.NopCloser(bytes.NewReader(rt.body)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

func offlineModel(t testing.TB, rt roundTrip) runtime.Model {
	t.Helper()
	m, err := NewOpenAI(OpenAIConfig{
		Model: "gpt-test", BaseURL: "http://provider.invalid/v1", APIKey: testKey,
		HTTPClient: &http.Client{Transport: rt},
		MaxRetries: 1,
		Sleep:      func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Rand:       func() float64 { return 0.5 },
		Now:        func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func frames(fs ...string) []byte {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("data: " + f + "\n\n")
	}
	return []byte(b.String())
}

// Replies that are not what the protocol promises end in a classified
// error, never a panic nor a half-read success.
func TestOpenAIMalformedReplies(t *testing.T) {
	tests := []struct {
		name string
		rt   roundTrip
		kind vm.ErrorKind
		sub  string
	}{
		{"truncated chunk at the end of the body", roundTrip{status: 200, body: []byte(`data: {"choices":[{"index":0,"delta":{"content":"x"`)},
			vm.KindUnavailable, "stream ended before the completion finished"},
		{"truncated chunk then [DONE]", roundTrip{status: 200, body: frames(`{"choices":[{"index":0,"delta":{"content":"x"`, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"content of the wrong type", roundTrip{status: 200, body: frames(chunk(`{"content":5}`, ""), "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"index of the wrong type", roundTrip{status: 200, body: frames(`{"choices":[{"index":"0","delta":{}}]}`, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"usage of the wrong type", roundTrip{status: 200, body: frames(chunk(`{}`, "stop"), `{"choices":[],"usage":{"prompt_tokens":"9"}}`, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"tool call index of the wrong type", roundTrip{status: 200, body: frames(chunk(`{"tool_calls":[{"index":"a","function":{"name":"f"}}]}`, "tool_calls"), "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"a chunk that is an array", roundTrip{status: 200, body: frames(`[1,2]`, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"a chunk that is not JSON", roundTrip{status: 200, body: frames(`hello`, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"an empty data line", roundTrip{status: 200, body: frames(``, "[DONE]")},
			vm.KindModelError, "malformed stream chunk"},
		{"an error event that is not an object", roundTrip{status: 200, body: frames(chunk(`{"content":""}`, ""), `{"error":"boom"}`)},
			vm.KindModelError, "malformed stream chunk"},
		{"a null chunk, then the end", roundTrip{status: 200, body: frames(`null`, "[DONE]")},
			vm.KindUnavailable, "stream ended before the completion finished"},
		{"an empty body", roundTrip{status: 200},
			vm.KindUnavailable, "stream ended before the completion finished"},
		{"a tool call without a name", roundTrip{status: 200, body: frames(chunk(`{"tool_calls":[{"index":3,"function":{"arguments":"{}"}}]}`, "tool_calls"), "[DONE]")},
			vm.KindModelError, "tool call 3 has no name"},
		{"a JSON body where a stream was asked for", roundTrip{status: 200, header: http.Header{"Content-Type": {"application/json"}},
			body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)},
			vm.KindUnavailable, "stream ended before the completion finished"},
		{"an error status with an HTML body", roundTrip{status: 503, header: http.Header{"Content-Type": {"text/html"}}, body: []byte("<html>down " + testKey + "</html>")},
			vm.KindUnavailable, "HTTP 503 Service Unavailable: <html>down [redacted]</html>"},
		{"an error envelope of the wrong shape", roundTrip{status: 400, body: []byte(`{"error":{"message":7}}`)},
			vm.KindModelError, `HTTP 400 Bad Request: {"error":{"message":7}}`},
		{"an error envelope without a message", roundTrip{status: 429, header: http.Header{"Retry-After": {"Tue, 01 Dec 2026 00:00:03 GMT"}}, body: []byte(`{"error":null}`)},
			vm.KindRateLimit, `HTTP 429 Too Many Requests: {"error":null} (after 2 attempts)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := offlineModel(t, tc.rt).Generate(context.Background(), simpleRequest(), func(string) {})
			wantKind(t, err, tc.kind, tc.sub)
		})
	}
}

// FuzzOpenAIStream feeds arbitrary response bodies and statuses to the
// provider: every outcome is a complete response or a classified *vm.Error
// that does not leak the API key.
func FuzzOpenAIStream(f *testing.F) {
	for _, seed := range [][]byte{
		frames(chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{}`, "stop"), usageChunk, "[DONE]"),
		frames(chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`, ""), chunk(`{}`, "tool_calls"), "[DONE]"),
		frames(chunk(`{"refusal":"no"}`, "stop"), "[DONE]"),
		frames(chunk(`{"content":"x"}`, ""), `{"error":{"message":"went wrong","type":"server_error"}}`),
		[]byte(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":null}}`),
		[]byte(": keep-alive\n\nevent: x\ndata: " + chunk(`{"content":"y"}`, "length") + "\n\ndata: [DONE]\n\n"),
	} {
		f.Add(uint16(200), seed)
	}
	f.Add(uint16(429), []byte(`{"error":{"message":"slow down","type":"requests"}}`))
	f.Add(uint16(502), []byte("bad gateway"))
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		code := 200 + int(status)%400
		m := offlineModel(t, roundTrip{status: code, body: body})
		var streamed strings.Builder
		resp, err := m.Generate(context.Background(), simpleRequest(), func(d string) { streamed.WriteString(d) })
		if err != nil {
			var ve *vm.Error
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is a %T, not a *vm.Error", err, err)
			}
			switch ve.Kind {
			case vm.KindRateLimit, vm.KindUnavailable, vm.KindTimeout, vm.KindModelError:
			default:
				t.Fatalf("error of kind %s: %v", ve.Kind, err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error contains the API key: %v", err)
			}
			return
		}
		if code != 200 && (code < 200 || code >= 400) {
			t.Fatalf("HTTP %d gave a response: %+v", code, resp)
		}
		if resp.FinishReason == "" || resp.Text != streamed.String() {
			t.Fatalf("response %+v after streaming %q", resp, streamed.String())
		}
		for _, c := range resp.ToolCalls {
			if c.ID == "" || c.Name == "" || len(c.Args) == 0 {
				t.Fatalf("incomplete tool call %+v", c)
			}
		}
	})
}
