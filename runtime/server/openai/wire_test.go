package openai_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden")

// TestWireGolden pins the exact bytes of the adapter's responses: the
// bodies (field order, escaping, frames) and the headers the adapter
// sets, over completions, streams, tool calls, interrupts, failures and
// refused requests. The golden was recorded before the allocation work
// on the response writers and the request parser; any change to it is a
// change on the wire.
func TestWireGolden(t *testing.T) {
	type exchange struct {
		name    string
		body    string
		headers []string
	}
	const tool = `"tools":[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	echo := []exchange{
		{"completion", chatBody("echo", false, "user", "hello there"), nil},
		{"stream", chatBody("echo", true, "user", "stream me"), nil},
		{"stream with usage", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream me"}]}`, nil},
		{"stream without usage", `{"model":"echo","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}`, nil},
		{"escapes", `{"model":"echo","messages":[{"role":"user","content":"h\u00e9llo <b>&amp; \"q\" \\ \n\t\u2028 \ud83d\ude00 \u0001"}]}`, nil},
		{"escapes streamed", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"h\u00e9llo <b>&amp; \"q\" \\ \n\t\u2028 \ud83d\ude00 \u0001"}]}`, nil},
		{"raw utf-8 and invalid utf-8", "{\"model\":\"echo\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xc3\xa9 \xff\xfe end\"}]}", nil},
		{"whitespace", " {\n \"model\" : \"echo\" ,\n \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"  spaced  \" } ] }\n", nil},
		{"content parts", `{"model":"echo","messages":[{"role":"user","content":[{"type":"text","text":"part one, "},{"type":"text","text":"part two"}]}]}`, nil},
		{"history", chatBody("echo", false, "system", "be brief", "user", "a", "assistant", "b", "user", "c"), nil},
		{"history streamed", chatBody("echo", true, "developer", "d", "user", "a", "assistant", "b", "user", "c"), nil},
		{"user session", `{"model":"echo","user":"end-user-7","messages":[{"role":"user","content":"x"}]}`, nil},
		{"session header", chatBody("echo", false, "user", "one"), []string{"X-Agentc-Session", "s1"}},
		{"session continued", chatBody("echo", false, "user", "one", "assistant", "echo: one", "user", "two"), []string{"X-Agentc-Session", "s1"}},
		{"case-insensitive keys", `{"MODEL":"echo","Messages":[{"ROLE":"user","Content":"keys"}],"STREAM":false}`, nil},
		{"duplicate keys", `{"model":"nope","model":"echo","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b","content":"c"}]}`, nil},
		{"sampling", `{"model":"echo","temperature":0.5,"top_p":1,"max_tokens":10,"seed":7,"stop":["x"],"n":1,"messages":[{"role":"user","content":"s"}]}`, nil},
		{"null members", `{"model":"echo","stream":null,"stream_options":null,"n":null,"user":null,"tools":null,"temperature":null,"messages":[{"role":"user","content":"n","tool_call_id":null}]}`, nil},
		{"failure", chatBody("echo", false, "user", "please fail"), nil},
		{"failure streamed", chatBody("echo", true, "user", "please fail"), nil},
		{"tool calls", `{"model":"echo",` + tool + `,"messages":[{"role":"user","content":"what is the weather in Paris"}]}`, nil},
		{"tool results", `{"model":"echo",` + tool + `,"messages":[{"role":"user","content":"what is the weather in Paris"},{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_WIRE","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_WIRE","content":"Sunny"}]}`, nil},
		{"tool calls streamed", `{"model":"echo","stream":true,"stream_options":{"include_usage":true},` + tool + `,"messages":[{"role":"user","content":"what is the weather in Paris, two"}]}`, nil},
		{"no text", `{"model":"echo","messages":[{"role":"user","content":""}]}`, nil},
		// Refused requests.
		{"not json", `{"model":`, nil},
		{"trailing garbage", `{"model":"echo","messages":[{"role":"user","content":"x"}]} x`, nil},
		{"model not a string", `{"model":5,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"model null", `{"model":null,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"model empty", `{"model":"","messages":[{"role":"user","content":"x"}]}`, nil},
		{"model missing", `{"messages":[{"role":"user","content":"x"}]}`, nil},
		{"model unknown", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, nil},
		{"messages missing", `{"model":"echo"}`, nil},
		{"messages null", `{"model":"echo","messages":null}`, nil},
		{"messages empty", `{"model":"echo","messages":[]}`, nil},
		{"messages an object", `{"model":"echo","messages":{}}`, nil},
		{"message a string", `{"model":"echo","messages":["hi"]}`, nil},
		{"role missing", `{"model":"echo","messages":[{"content":"x"}]}`, nil},
		{"role unknown", `{"model":"echo","messages":[{"role":"robot","content":"x"}]}`, nil},
		{"role a number", `{"model":"echo","messages":[{"role":1,"content":"x"}]}`, nil},
		{"content a number", `{"model":"echo","messages":[{"role":"user","content":5}]}`, nil},
		{"content an object", `{"model":"echo","messages":[{"role":"user","content":{"text":"x"}}]}`, nil},
		{"content bad part", `{"model":"echo","messages":[{"role":"user","content":[{"type":"audio"}]}]}`, nil},
		{"content bad parts", `{"model":"echo","messages":[{"role":"user","content":[1,2]}]}`, nil},
		{"last message assistant", `{"model":"echo","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`, nil},
		{"last message function", `{"model":"echo","messages":[{"role":"function","content":"y"}]}`, nil},
		{"tool without id", `{"model":"echo","messages":[{"role":"tool","content":"y"}]}`, nil},
		{"tool result unknown", `{"model":"echo","messages":[{"role":"tool","tool_call_id":"call_nope","content":"y"}]}`, nil},
		{"n 2", `{"model":"echo","n":2,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"stream a string", `{"model":"echo","stream":"yes","messages":[{"role":"user","content":"x"}]}`, nil},
		{"stream_options a string", `{"model":"echo","stream":true,"stream_options":"x","messages":[{"role":"user","content":"x"}]}`, nil},
		{"include_usage a string", `{"model":"echo","stream":true,"stream_options":{"include_usage":"x"},"messages":[{"role":"user","content":"x"}]}`, nil},
		{"temperature high", `{"model":"echo","temperature":3,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"max_tokens zero", `{"model":"echo","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"user a number", `{"model":"echo","user":5,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"bad session", chatBody("echo", false, "user", "x"), []string{"X-Agentc-Session", strings.Repeat("s", 201)}},
	}
	support := []exchange{
		{"interrupted", chatBody("support", false, "user", "prod.example.com fails with x509: certificate signed by unknown authority"), []string{"X-Agentc-Session", "case-1"}},
		{"re-sent", chatBody("support", false, "user", "prod.example.com fails with x509: certificate signed by unknown authority"), []string{"X-Agentc-Session", "case-1"}},
		{"wrong answer", chatBody("support", false, "user", "q", "assistant", "a", "user", "maybe later"), []string{"X-Agentc-Session", "case-1"}},
		{"resumed streamed", chatBody("support", true, "user", "q", "assistant", "a", "user", `{"approved": true}`), []string{"X-Agentc-Session", "case-1"}},
		{"interrupted streamed", `{"model":"support","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"prod.example.com fails with x509: certificate signed by unknown authority"}]}`, []string{"X-Agentc-Session", "case-2"}},
		{"resumed", chatBody("support", false, "user", `{"approved": false}`), []string{"X-Agentc-Session", "case-2"}},
	}
	var out strings.Builder
	record := func(e *env, xs []exchange) {
		for _, x := range xs {
			r := e.chat(aliceToken, x.body, x.headers...)
			fmt.Fprintf(&out, "=== %s\n%d\n", x.name, r.status)
			for _, h := range []string{"Content-Type", "Cache-Control", "X-Agentc-Session", "X-Agentc-Run", "X-Agentc-Status", "X-Request-Id", "X-Should-Retry", "Retry-After"} {
				if v, ok := r.header[h]; ok {
					fmt.Fprintf(&out, "%s: %q\n", h, v)
				}
			}
			fmt.Fprintf(&out, "%s\n", r.body)
		}
	}
	record(newEnv(t, envOpts{}), echo)
	record(newEnv(t, envOpts{support: true}), support)
	const file = "testdata/wire.golden"
	got := numberULIDs(out.String())
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// ulidRE matches a ULID: its first characters are the minting time, which
// the run's goroutines read from the test clock in no fixed order.
var ulidRE = regexp.MustCompile(`[0-7][0-9A-HJKMNP-TV-Z]{25}`)

// numberULIDs replaces each distinct ULID of s by its ordinal of first
// appearance, so that the golden pins where an id recurs, not when it was
// minted.
func numberULIDs(s string) string {
	seen := map[string]string{}
	return ulidRE.ReplaceAllStringFunc(s, func(u string) string {
		if n, ok := seen[u]; ok {
			return n
		}
		n := "ULID" + strconv.Itoa(len(seen)+1)
		seen[u] = n
		return n
	})
}
