package agui

import (
	"bytes"
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
		// Left to encoding/json by the one-pass scanner: keys in another
		// case or with escapes; and what it reads itself: whitespace,
		// repeated keys, unknown members of any kind.
		`{"THREADID":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","meſſages":[{"id":"m","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"ID":"m","id":"n","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","CONTENT":"hi","content":"ho"}]}`,
		" {\"threadId\" : \"t\" ,\n\"runId\":\"r\",\t\"messages\" : [ {\"id\":\"m\" , \"role\" : \"user\", \"content\" : [ {\"type\":\"text\",\"text\":\"a\\\"]}\"} ] } ] } ",
		`{"threadId":"t","threadId":"u","runId":"r","messages":[{"id":"m","role":"user","content":"a"}],"messages":[{"id":"n","role":"user","content":"b"}]}`,
		`{"x":{"y":[1,{"z":"}]"}],"w":-1.5e3},"threadId":"t","runId":"r","q":true,"messages":[{"id":"m","role":"user","content":"hi","k":null}],"n":null}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"\u0075ser","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"},null]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"},1]}`,
		`{"threadId":"t","runId":"r","messages":null}`, `{"threadId":"t","runId":"r","messages":{}}`,
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

// TestParseDecoded: the one-pass scanner reads what it can read as
// encoding/json does, and leaves the rest to parseMembers, which reads it
// the same or names what is wrong.
func TestParseDecoded(t *testing.T) {
	const msg = `[{"id":"m","role":"user","content":"hi"}]`
	tests := []struct {
		body string
		own  bool // read by the scanner itself
	}{
		{`{"threadId":"t","runId":"r","messages":` + msg + `}`, true},
		{" {\"threadId\" : \"t\" ,\n\"runId\":\"r\",\t\"messages\" : [ {\"id\":\"m\" , \"role\" : \"user\" , \"content\" : \"a\\\"]}\" } ] } ", true},
		{`{"threadId":"t","threadId":"u","runId":"r","messages":[],"messages":` + msg + `}`, true},
		{`{"x":{"y":[1,{"z":"}]"}],"w":-1.5e3},"threadId":"t","runId":"r","q":true,"messages":[{"id":"m","role":"user","content":"hi","k":null}],"n":null}`, true},
		{`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi","toolCallId":"c","toolCalls":null}],"tools":[{"name":"f"}],"context":[],"resume":null,"protocolVersion":"1","parentRunId":"p"}`, true},
		{`{"THREADID":"t","runId":"r","messages":` + msg + `}`, false},
		{`{"threadId":"t","runId":"r","meſſages":` + msg + `}`, false},
		{`{"thread\u0049d":"t","runId":"r","messages":` + msg + `}`, false},
		{`{"threadId":"t","runId":"r","messages":[{"ID":"m","id":"n","role":"user","content":"hi"}]}`, false},
		{`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"},null]}`, false},
		{`{"threadId":"t","runId":"r","messages":null}`, false},
		{`{"threadId":"t","runId":"r","messages":` + msg + `} x`, false},
	}
	for _, tt := range tests {
		fast, err := parseDecoded([]byte(tt.body))
		if (err == nil) != tt.own {
			t.Errorf("%s: scanned itself %v (%v), want %v", tt.body, err == nil, err, tt.own)
			continue
		}
		slow, serr := parseMembers([]byte(tt.body))
		if tt.own && (serr != nil || !reflect.DeepEqual(fast, slow)) {
			t.Errorf("%s: scanned %+v, member by member %+v, %v", tt.body, fast, slow, serr)
		}
	}
}
