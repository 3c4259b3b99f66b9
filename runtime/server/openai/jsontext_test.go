package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/jsonscan"
)

// jsonLiterals are JSON values the fast paths must agree with
// encoding/json on: plain strings, every kind of escape, HTML characters,
// U+2028/2029, raw and invalid UTF-8, and values that are not strings.
var jsonLiterals = []string{
	`""`, `"hello"`, `"Why does the TLS handshake fail?"`, `"café"`, `"😀"`, `"\u00e9"`, `"a\nb"`, `"tab\t"`,
	`"q\"q"`, `"back\\slash"`, `"\/"`, `"<b>"`, `"a&b"`, `"x>y"`, "\"\u2028\"", "\"\u2029\"", "\"\u2027\"", "\"\u202a\"",
	"\"\xff\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"a\xe2\x80\"", `"\ud83d\ude00"`, `"\ud83d"`,
	`null`, `true`, `12`, `[]`, `{}`, `["a"]`, ` "spaced" `, "\"\x7f\"",
}

func TestPlainString(t *testing.T) {
	for _, lit := range jsonLiterals {
		checkPlainString(t, []byte(lit))
	}
	for lit, want := range map[string]bool{`"hello"`: true, `"café"`: true, `"<b>"`: true, `"a\nb"`: false, "\"\xff\"": false, `null`: false, ` "x"`: false} {
		if _, ok := jsonscan.String([]byte(lit)); ok != want {
			t.Errorf("jsonscan.String(%s) ok = %v, want %v", lit, ok, want)
		}
	}
}

func TestCanonicalString(t *testing.T) {
	for _, lit := range jsonLiterals {
		checkCanonicalString(t, []byte(lit))
	}
	for lit, want := range map[string]bool{`"hello"`: true, `"café"`: true, `"😀"`: true, `"<b>"`: false, `"a&b"`: false,
		"\"\u2028\"": false, "\"\u2027\"": true, `"\u00e9"`: false, "\"\xff\"": false, `null`: false} {
		if got := canonicalString([]byte(lit)); got != want {
			t.Errorf("canonicalString(%s) = %v, want %v", lit, got, want)
		}
	}
}

// checkPlainString: a plain string's value is encoding/json's.
func checkPlainString(t *testing.T, lit []byte) {
	t.Helper()
	s, ok := jsonscan.String(lit)
	if !ok {
		return
	}
	var want string
	if err := json.Unmarshal(lit, &want); err != nil || s != want {
		t.Fatalf("jsonscan.String(%q) = %q; encoding/json: %q, %v", lit, s, want, err)
	}
}

// checkCanonicalString: a canonical literal is what appendString writes
// for its value.
func checkCanonicalString(t *testing.T, lit []byte) {
	t.Helper()
	if !canonicalString(lit) {
		return
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		t.Fatalf("canonicalString(%q) but encoding/json: %v", lit, err)
	}
	if got := appendString(nil, s); !bytes.Equal(got, lit) {
		t.Fatalf("canonicalString(%q) but appendString writes %q", lit, got)
	}
}

func FuzzJSONText(f *testing.F) {
	for _, lit := range jsonLiterals {
		f.Add([]byte(lit))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		checkPlainString(t, lit)
		checkCanonicalString(t, lit)
		if !json.Valid(lit) {
			return
		}
		// A message's content decodes as it did as a json.RawMessage.
		var c content
		if err := json.Unmarshal(lit, &c); err != nil {
			t.Fatalf("content %q: %v", lit, err)
		}
		var raw json.RawMessage
		if err := json.Unmarshal(lit, &raw); err != nil {
			t.Fatal(err)
		}
		text, files, err := c.get()
		wantText, wantFiles, wantErr := messageContent(raw)
		if text != wantText || !reflect.DeepEqual(files, wantFiles) || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("content %q: %q %v %v, want %q %v %v", lit, text, files, err, wantText, wantFiles, wantErr)
		}
		if got, want := valueText(lit), valueTextSlow(lit); got != want {
			t.Fatalf("valueText(%q) = %q, want %q", lit, got, want)
		}
	})
}

// valueTextSlow is valueText without its fast path.
func valueTextSlow(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(v)); t != "null" {
		return t
	}
	return ""
}

func TestContentInRequest(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"plain", `{"role":"user","content":"hi there"}`, "hi there"},
		{"escaped", `{"role":"user","content":"a\nb \u00e9"}`, "a\nb é"},
		{"parts", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "ab"},
		{"null", `{"role":"user","content":null}`, ""},
		{"absent", `{"role":"user"}`, ""},
		{"last of duplicates", `{"role":"user","content":[{"type":"text","text":"a"}],"content":"b"}`, "b"},
		{"last of duplicates, raw", `{"role":"user","content":"b","content":[{"type":"text","text":"a"}]}`, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m chatMessage
			if err := json.Unmarshal([]byte(tc.body), &m); err != nil {
				t.Fatal(err)
			}
			if got, err := m.Content.text(); err != nil || got != tc.want {
				t.Fatalf("text %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestSetHeaders(t *testing.T) {
	h := http.Header{"X-Agentc-Session": {"old"}}
	setHeaders(h, "X-Agentc-Session", "s", "x-request-id", "r", "Content-Type", "application/json")
	want := http.Header{"X-Agentc-Session": {"s"}, "X-Request-Id": {"r"}, "Content-Type": {"application/json"}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("header %v, want %v", h, want)
	}
	h.Add("X-Agentc-Session", "more") // the values do not share a backing array
	if h.Get("X-Request-Id") != "r" || len(h["X-Agentc-Session"]) != 2 {
		t.Fatalf("header after Add %v", h)
	}
}

// oneByte reads one byte at a time.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

func TestReadAll(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name string
		r    io.Reader
		buf  []byte
		want string
	}{
		{"empty", strings.NewReader(""), nil, ""},
		{"into nil", strings.NewReader(long), nil, long},
		{"into a small buffer", strings.NewReader(long), make([]byte, 0, 3), long},
		{"byte by byte", oneByte{strings.NewReader(long)}, make([]byte, 0, 1024), long},
		{"exactly the buffer", strings.NewReader("abcd"), make([]byte, 0, 4), "abcd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(tc.r, tc.buf)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %d bytes, %v; want %d", len(got), err, len(tc.want))
			}
		})
	}
	// A body over the server's limit reports it as io.ReadAll does.
	r := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(long)), 100)
	_, err := readAll(r, make([]byte, 0, 16))
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) || mbe.Limit != 100 {
		t.Fatalf("err %v, want a MaxBytesError", err)
	}
}
