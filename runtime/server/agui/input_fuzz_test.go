package agui

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseInput: any body parses or is refused without panicking; a user
// message's files are bytes with a media type or an http(s) URL.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"document","source":{"type":"url","value":"https://x/y"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"image","source":{"type":"file","value":"f"}}]}]}`,
		`{}`, `[]`, `{"threadId":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseInput(bytes.NewReader(body))
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
