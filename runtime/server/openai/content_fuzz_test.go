package openai

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzMessageContent: any content decodes without panicking; images come
// back only as bytes of an image media type or an http(s) URL.
func FuzzMessageContent(f *testing.F) {
	for _, s := range []string{
		`"hi"`, `null`, `[{"type":"text","text":"a"}]`,
		`[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]`,
		`[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]`,
		`[{"type":"image_url","image_url":{"url":"data:image/png,x"}}]`, `[{"type":"image_url"}]`, `[{"type":"input_audio"}]`, `{}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		_, files, err := messageContent(raw)
		if err != nil {
			return
		}
		for _, fl := range files {
			ok := fl.Data != nil && strings.HasPrefix(fl.MediaType, "image/") ||
				fl.Data == nil && (strings.HasPrefix(fl.URL, "https://") || strings.HasPrefix(fl.URL, "http://"))
			if !ok {
				t.Fatalf("file %+v from %s", fl, raw)
			}
		}
	})
}
