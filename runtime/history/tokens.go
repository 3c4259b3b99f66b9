package history

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/agentc/agentc/runtime"
)

// Token counting (spec/context.md, "Token counting"). Models of the GPT-4o,
// GPT-4.1, GPT-5 and o-series families count with o200k_base, GPT-4 and
// GPT-3.5 with cl100k_base — both embedded in the binary, no network. Any
// other model (scripted models, local models behind an OpenAI-compatible
// endpoint) is estimated at one token per 4 bytes, rounded up: close for
// English prose, and never zero for a non-empty text.

// Per-message overhead of the chat format (role, separators), as OpenAI's
// cookbook counts it for its chat models.
const (
	messageOverhead = 4
	replyOverhead   = 3
	bytesPerToken   = 4
)

// Counter counts tokens for one model. It is safe for concurrent use.
type Counter struct {
	enc   *codec.Codec // nil: the byte estimate
	name  string
	cache *countCache
}

// Encoding returns the counter's encoding: "o200k_base", "cl100k_base" or
// "estimate".
func (c *Counter) Encoding() string { return c.name }

// Count returns the tokens of s.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	if c == nil || c.enc == nil {
		return (len(s) + bytesPerToken - 1) / bytesPerToken
	}
	if len(s) < cacheMinBytes {
		n, err := c.enc.Count(s)
		if err != nil {
			return (len(s) + bytesPerToken - 1) / bytesPerToken
		}
		return n
	}
	if n, ok := c.cache.get(s); ok {
		return n
	}
	n, err := c.enc.Count(s)
	if err != nil {
		n = (len(s) + bytesPerToken - 1) / bytesPerToken
	}
	c.cache.put(s, n)
	return n
}

// Message returns the tokens of one chat message: content, tool call names
// and arguments, the tool call id, plus the format's overhead.
func (c *Counter) Message(m *runtime.Message) int {
	n := messageOverhead + c.Count(m.Content)
	if m.Name != "" {
		n += c.Count(m.Name)
	}
	if m.ToolCallID != "" {
		n += c.Count(m.ToolCallID)
	}
	for _, tc := range m.ToolCalls {
		n += c.Count(tc.ID) + c.Count(tc.Name) + c.Count(string(tc.Args)) + messageOverhead
	}
	return n
}

// Messages returns the tokens of a request's messages (the reply's priming
// included).
func (c *Counter) Messages(msgs []runtime.Message) int {
	n := replyOverhead
	for i := range msgs {
		n += c.Message(&msgs[i])
	}
	return n
}

// Tools returns the tokens of the tool specs a request offers (name,
// description and schema, counted as their text).
func (c *Counter) Tools(specs []runtime.ToolSpec) int {
	n := 0
	for _, s := range specs {
		n += c.Count(s.Name) + c.Count(s.Description) + messageOverhead
		n += schemaTokens(c, s.InputSchema)
	}
	return n
}

// schemaTokens estimates a JSON Schema's tokens from its keys and string
// values (a schema is small; its exact serialization is the provider's).
func schemaTokens(c *Counter, m map[string]any) int {
	n := 0
	for k, v := range m {
		n += c.Count(k) + 1
		switch v := v.(type) {
		case string:
			n += c.Count(v)
		case map[string]any:
			n += schemaTokens(c, v)
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					n += c.Count(s)
				} else if mm, ok := e.(map[string]any); ok {
					n += schemaTokens(c, mm)
				}
			}
		default:
			n++
		}
	}
	return n
}

// Encodings are loaded once per process, on first use (an encoding's
// tables take tens of milliseconds to build).
var (
	encMu     sync.Mutex
	encodings = map[string]*Counter{}
	estimate  = &Counter{name: "estimate"}
)

// The encodings agentc counts with. Only these two are linked (the
// tokenizer's others would add megabytes to the binary).
const (
	o200k  = "o200k_base"
	cl100k = "cl100k_base"
)

// CounterFor returns the counter for a provider model id ("gpt-4o-mini",
// "openai/gpt-4.1", "scripted:fast"): one per encoding, shared.
func CounterFor(model string) *Counter {
	enc, ok := encodingFor(model)
	if !ok {
		return estimate
	}
	encMu.Lock()
	defer encMu.Unlock()
	if c := encodings[enc]; c != nil {
		return c
	}
	var cd *codec.Codec
	switch enc {
	case o200k:
		cd = codec.NewO200kBase()
	case cl100k:
		cd = codec.NewCl100kBase()
	default:
		return estimate
	}
	c := &Counter{enc: cd, name: enc, cache: newCountCache()}
	encodings[enc] = c
	return c
}

// encodingFor maps a model id to its encoding. A provider prefix
// ("openai/", "azure/") is ignored.
func encodingFor(model string) (string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	switch {
	case m == "":
		return "", false
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "chatgpt-4o"), strings.HasPrefix(m, "gpt-4.1"),
		strings.HasPrefix(m, "gpt-4.5"), strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "o1"),
		strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"), strings.HasPrefix(m, "gpt-oss"):
		return o200k, true
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"),
		strings.HasPrefix(m, "text-embedding-"):
		return cl100k, true
	}
	return "", false
}

// countCache remembers the counts of long strings (tool results, history
// messages), which every turn of a long session counts again. It is
// bounded: when full, it starts over.
const (
	cacheMinBytes = 1
	cacheMax      = 1 << 14
)

type countKey struct {
	h uint64
	n int
}

type countCache struct {
	mu sync.Mutex
	m  map[countKey]int
}

func newCountCache() *countCache { return &countCache{m: map[countKey]int{}} }

// key is FNV-1a of s with its length (deterministic: no seeded hash).
func (c *countCache) key(s string) countKey {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return countKey{h, len(s)}
}

func (c *countCache) get(s string) (int, bool) {
	k := c.key(s)
	c.mu.Lock()
	n, ok := c.m[k]
	c.mu.Unlock()
	return n, ok
}

func (c *countCache) put(s string, n int) {
	k := c.key(s)
	c.mu.Lock()
	if len(c.m) >= cacheMax {
		clear(c.m)
	}
	c.m[k] = n
	c.mu.Unlock()
}
