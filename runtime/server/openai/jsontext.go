package openai

import (
	"encoding/json"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/agentc/agentc/internal/jsonscan"
	"github.com/agentc/agentc/runtime"
)

// Fast paths for the JSON strings of a typical request and answer: a
// message's content and a run's text output are most often plain strings
// (no escapes, valid UTF-8), which need neither encoding/json's reflection
// to decode nor a decoded copy to encode again. Anything else takes the
// general path, so the results are encoding/json's byte for byte.

// canonicalString reports whether lit is a JSON string literal that
// appendString would write as it is: no escapes, valid UTF-8, none of the
// characters encoding/json escapes (<, >, &, U+2028, U+2029). Such a
// literal can be copied to a response instead of decoded and encoded again.
func canonicalString(lit []byte) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	in := lit[1 : len(lit)-1]
	for i, c := range in {
		switch {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		case c == 0xE2 && i+2 < len(in) && in[i+1] == 0x80 && (in[i+2] == 0xA8 || in[i+2] == 0xA9):
			return false // U+2028, U+2029
		}
	}
	return utf8.Valid(in)
}

// content is a message's content as the request has it: a plain string
// decoded at once (the usual case, without a copy of its JSON), else the
// raw value for messageContent. Decoding never fails: what the value
// holds is checked by parse, with the same messages for every form.
type content struct {
	raw   json.RawMessage // the value as sent, unless plain
	str   string          // the value of a plain string
	plain bool
}

func (c *content) UnmarshalJSON(b []byte) error {
	if s, ok := jsonscan.String(b); ok {
		*c = content{str: s, plain: true}
		return nil
	}
	// As json.RawMessage keeps a value (null included).
	*c = content{raw: append(c.raw[:0], b...)}
	return nil
}

// get is the content's text and images (messageContent).
func (c *content) get() (string, []runtime.InputFile, error) {
	if c.plain {
		return c.str, nil, nil
	}
	return messageContent(c.raw)
}

// text is the content's text: a string, or the concatenated text of its
// parts. Null is empty; a part other than text and image_url is an error.
func (c *content) text() (string, error) {
	text, _, err := c.get()
	return text, err
}

// setHeaders sets header fields (key, value pairs; keys in canonical form)
// with one allocation for all their values instead of one per Set.
func setHeaders(h http.Header, kv ...string) {
	vals := make([]string, len(kv)/2)
	for i := range vals {
		vals[i] = kv[2*i+1]
		h[http.CanonicalHeaderKey(kv[2*i])] = vals[i : i+1 : i+1]
	}
}

// bufs holds the buffers of request bodies and responses: a request reads
// its body into one and a non-streaming response is written from one,
// which go back when the request is done with them (Write does not keep
// its argument; nothing keeps a slice of a body: encoding/json copies what
// it decodes).
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuf is the largest buffer bufs keeps: a big request does not
// pin its memory.
const maxPooledBuf = 64 << 10

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf returns p, whose buffer grew to b, to the pool.
func putBuf(p *[]byte, b []byte) {
	if cap(b) <= maxPooledBuf {
		*p = b[:0]
		bufs.Put(p)
	}
}
