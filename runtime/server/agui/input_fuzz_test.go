package agui

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseInput: any body parses or is refused without panicking; a user
// message's files are bytes with a media type or an http(s) URL.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"document","source":{"type":"url","value":"https://x/y"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"image","source":{"type":"file","value":"f"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":null,"toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"b","role":"tool","content":"ok","toolCallId":"c1"}],"resume":[{"interruptId":"i","status":"resolved","payload":{"x":1}}],"protocolVersion":null}`,
		`{"threadId":"t","runId":"r","messages":[null]}`, `{"threadId":"t","runId":"r","messages":[]} x`,
		`{}`, `[]`, `{"threadId":1}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseInput(bytes.NewReader(body))
		if utf8.Valid(body) {
			// Decoded in one pass or member by member: the same input.
			if fast, ferr := parseDecoded(body); ferr == nil {
				slow, serr := parseMembers(body)
				if serr != nil || !reflect.DeepEqual(fast, slow) {
					t.Fatalf("%s: decoded once %+v, member by member %+v, %v", body, fast, slow, serr)
				}
			}
		}
		if err != nil {
			return
		}
		for _, m := range in.Messages {
			for _, fl := range m.Files {
				ok := fl.Data != nil && fl.MediaType != "" ||
					fl.Data == nil && (strings.HasPrefix(fl.URL, "https://") || strings.HasPrefix(fl.URL, "http://"))
				if !ok {
					t.Fatalf("file %+v from %s", fl, body)
				}
			}
		}
	})
}

// FuzzUnescaped: a string literal without escapes reads as json.Unmarshal
// reads it.
func FuzzUnescaped(f *testing.F) {
	for _, s := range []string{`"a"`, `""`, `"é ü"`, `"a\"b"`, `"\u0041"`, `"a`, `null`, `1`, "\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, ok := unescaped(raw)
		if !ok || !utf8.Valid(raw) {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil || s != want {
			t.Fatalf("unescaped(%q) = %q; json.Unmarshal: %q, %v", raw, s, want, err)
		}
	})
}
