package runtime

import (
	"testing"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/runtimetest"
)

// TestInputText: the invocation's text (agentc run --input, a protocol's
// last user message) reaches each kind of input field as the value it
// names (issue 18: enum, json and messages were read as text).
func TestInputText(t *testing.T) {
	prog := runtimetest.CompileSource(t, "in.agent", `workflow in

state E { choice: "yes" | "no" }
graph pick(E) input choice { start -> end }

state J { doc: json }
graph parse(J) input doc { start -> end }

state M { log: messages = [] }
graph chat(M) input log { start -> end }

state S { q: string }
graph ask(S) input q { start -> end }

state R { p: { n: int } }
graph rec(R) input p { start -> end }
`)
	r := &Runner{cur: &program{prog: prog}}
	for _, tc := range []struct {
		graph, text, want string // want: the value as canonical JSON; "error" for an invalid invocation
	}{
		{"pick", "yes", `"yes"`},
		{"pick", `"no"`, `"no"`},
		{"pick", "maybe", "error"},
		{"parse", `{"n": 3}`, `{"n":3}`},
		{"parse", "plain words", `"plain words"`},
		{"parse", "42", `42`},
		{"chat", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`, `[{"role":"user","content":"hi","name":null,"tool_call_id":null},{"role":"assistant","content":"hello","name":null,"tool_call_id":null}]`},
		{"chat", "just text", `[{"role":"user","content":"just text","name":null,"tool_call_id":null}]`},
		{"ask", `{"n": 3}`, `"{\"n\": 3}"`},
		{"rec", `{"n": 3}`, `{"n":3}`},
		{"rec", "three", "error"},
	} {
		gi, ok := prog.Runnable(tc.graph)
		if !ok {
			t.Fatalf("no graph %s", tc.graph)
		}
		v, err := r.inputValue(gi, tc.text)
		if tc.want == "error" {
			if err == nil {
				t.Errorf("%s %q: no error", tc.graph, tc.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tc.graph, tc.text, err)
			continue
		}
		if b, _ := types.ToJSON(v); string(b) != tc.want {
			t.Errorf("%s %q = %s, want %s", tc.graph, tc.text, b, tc.want)
		}
	}
}
