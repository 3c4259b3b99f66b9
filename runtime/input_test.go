package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/runtimetest"
)

// TestInputText: the invocation's text (agentc run --input, a protocol's
// last user message) reaches each kind of input field as the value it
// names (issue 18: enum, json and messages were read as text); an input
// longer than its field's list size is an invalid invocation (issue 20).
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

state L { urls: list<string> max 2 = [] }
graph few(L) input urls { start -> end }

state C { log: messages max 1 = [] }
graph short(C) input log { start -> end }
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
		{"few", `["a", "b"]`, `["a","b"]`},
		{"few", `["a", "b", "c"]`, "error: field urls: a list of 3 elements, past its max of 2"},
		{"short", "just text", `[{"role":"user","content":"just text","name":null,"tool_call_id":null}]`},
		{"short", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`, "error: field log: a list of 2 elements, past its max of 1"},
	} {
		gi, ok := prog.Runnable(tc.graph)
		if !ok {
			t.Fatalf("no graph %s", tc.graph)
		}
		v, err := r.inputValue(gi, tc.text)
		if want, ok := strings.CutPrefix(tc.want, "error"); ok {
			if !errors.Is(err, ErrInvalidInvocation) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %q: error %v, want an invalid invocation %q", tc.graph, tc.text, err, want)
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
