package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store/memory"
)

const confirmSource = `workflow mail

model fast { provider = openai, name = "gpt-4o-mini" }

tool send_email "Sends an email" {
  input   { to: string, body: string }
  output  string
  run     = builtin.http_fetch
  effect  = side_effect
  confirm = true
}

tool archive "Archives a thread" {
  input  { thread: string }
  output string
  run    = builtin.http_fetch
  effect = side_effect
}

tool lookup "Finds an address" {
  input  { name: string }
  output string
  run    = builtin.http_fetch
  effect = read_only
}

agent helper llm { model = fast, tools = [send_email, lookup] }
agent careful llm { model = fast, tools = [archive, lookup], confirm_side_effects = true }

state S { ask: string, reply: string = "" }

graph g(S) input ask output reply {
  node h = llm helper { prompt = ask } into reply
  start -> h
  h -> end
}

agent team chain { agents = [helper] }

graph c(S) input ask output reply {
  node h = agent team { prompt = ask } into reply
  start -> h
  h -> end
}

graph k(S) input ask output reply {
  node h = llm careful { prompt = ask } into reply
  start -> h
  h -> end
}
`

const confirmModel = `version: 1
model: fast
replies:
  - match: {turn: 1, input: "archive"}
    tool_calls:
      - {id: c1, name: lookup, args: {name: bob}}
      - {id: c2, name: archive, args: {thread: "t-9"}}
  - match: {turn: 1}
    tool_calls:
      - {id: c1, name: lookup, args: {name: bob}}
      - {id: c2, name: send_email, args: {to: "bob@example.com", body: "hi"}}
  - match: {turn: 2, input: "rejected"}
    text: "not sent"
  - match: {turn: 2}
    text: "done"
`

// callLog is a tool that records the arguments it was called with.
type callLog struct {
	name string
	mu   sync.Mutex
	args []string
}

func (t *callLog) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: t.name} }
func (t *callLog) Effect() runtime.Effect { return runtime.SideEffect }
func (t *callLog) Call(_ context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.args = append(t.args, string(req.Args))
	return json.RawMessage(`"ok"`), nil
}

func (t *callLog) calls() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.args...)
}

type confirmEnv struct {
	t                     *testing.T
	r                     *runtime.Runner
	send, archive, lookup *callLog
}

func newConfirmEnv(t *testing.T) *confirmEnv {
	prog := runtimetest.Compile(t, fstest.MapFS{"mail.agent": {Data: []byte(confirmSource)}}, "mail.agent")
	fx, err := model.LoadFixture("fast.yaml", []byte(confirmModel))
	if err != nil {
		t.Fatal(err)
	}
	e := &confirmEnv{t: t, send: &callLog{name: "send_email"}, archive: &callLog{name: "archive"}, lookup: &callLog{name: "lookup"}}
	e.r, err = runtime.NewRunner(runtime.RunnerConfig{Store: memory.New(), Program: prog, App: "mail",
		Models: map[string]runtime.Model{"fast": model.NewScripted(runtime.ModelInfo{Name: "fast"}, fx)},
		Tools:  map[string]runtime.Tool{"send_email": e.send, "archive": e.archive, "lookup": e.lookup},
		Clock:  &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.r.Close(context.Background()) })
	return e
}

func (e *confirmEnv) run(inv runtime.Invocation) ([]*runtime.Event, error) {
	ch, err := e.r.Run(context.Background(), inv)
	if err != nil {
		return nil, err
	}
	var evs []*runtime.Event
	for ev := range ch {
		evs = append(evs, ev)
	}
	return evs, nil
}

func (e *confirmEnv) start(graph string) *runtime.Event {
	e.t.Helper()
	input := "mail bob"
	if graph == "k" {
		input = "archive the thread"
	}
	evs, err := e.run(runtime.Invocation{User: "u", Session: e.t.Name(), Input: input, Runnable: graph})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs[len(evs)-1]
}

func (e *confirmEnv) answer(run, id, value string) ([]*runtime.Event, error) {
	return e.run(runtime.Invocation{User: "u", Session: e.t.Name(),
		Resume: &runtime.ResumeRequest{Run: run, Values: map[string]json.RawMessage{id: json.RawMessage(value)}}})
}

// TestToolConfirmation: a `confirm = true` tool pauses the loop before the
// call as a typed interrupt showing the arguments; approve runs it, edit
// runs it with the user's (type-checked) arguments, reject returns a
// tool_error to the model (issue 16 item 5).
func TestToolConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name, value, reply, sent string
	}{
		{"approve", `{"decision": "approve"}`, "done", `{"to":"bob@example.com","body":"hi"}`},
		{"edit", `{"decision": "edit", "args": {"to": "bob@example.org", "body": "hello"}}`, "done", `{"to":"bob@example.org","body":"hello"}`},
		{"reject", `{"decision": "reject", "reason": "not today"}`, "not sent", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newConfirmEnv(t)
			fin := e.start("g")
			if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 1 {
				t.Fatalf("first run: %s %+v", fin.Status, fin.Interrupts)
			}
			in := fin.Interrupts[0]
			if in.ID != "g/h/confirm/1/1" || in.Node != "h/confirm/1/1" ||
				in.Prompt != `Allow helper to call send_email with {"to":"bob@example.com","body":"hi"}?` ||
				in.Schema["properties"].(map[string]any)["args"] == nil {
				t.Fatalf("interrupt %+v", in)
			}
			if len(e.send.calls()) != 0 || len(e.lookup.calls()) != 0 {
				t.Fatalf("tools ran before the decision: %v %v", e.send.calls(), e.lookup.calls())
			}
			// Edited arguments are checked against the tool's input type.
			_, err := e.answer(fin.Run, in.ID, `{"decision": "edit", "args": {"to": "x"}}`)
			if !errors.Is(err, runtime.ErrInvalidResume) || !strings.Contains(err.Error(), "body") {
				t.Fatalf("an edit missing a field: %v", err)
			}
			evs, err := e.answer(fin.Run, in.ID, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			last := evs[len(evs)-1]
			if last.Status != runtime.StatusCompleted || string(last.Output) != `"`+tc.reply+`"` {
				t.Fatalf("after %s: %s %s", tc.name, last.Status, last.Output)
			}
			want := []string{}
			if tc.sent != "" {
				want = []string{tc.sent}
			}
			if got := e.send.calls(); strings.Join(got, "|") != strings.Join(want, "|") || len(e.lookup.calls()) != 1 {
				t.Fatalf("send_email calls %v (want %v), lookup %v", got, want, e.lookup.calls())
			}
			if tc.name == "reject" {
				var res *runtime.Event
				for _, ev := range evs {
					if ev.Kind == runtime.EventToolResult && ev.ToolCall.Name == "send_email" {
						res = ev
					}
				}
				if res == nil || res.Error == nil || res.Error.Kind != "tool_error" || !strings.Contains(res.Error.Message, "rejected") ||
					!strings.Contains(res.Error.Message, "not today") {
					t.Fatalf("the rejected call's result %+v", res)
				}
			}
		})
	}
}

// TestConfirmSideEffects: an agent with confirm_side_effects asks before
// its side_effect tools only.
func TestConfirmSideEffects(t *testing.T) {
	e := newConfirmEnv(t)
	fin := e.start("k")
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 1 || fin.Interrupts[0].ID != "k/h/confirm/1/1" {
		t.Fatalf("first run: %s %+v", fin.Status, fin.Interrupts)
	}
	evs, err := e.answer(fin.Run, "h/confirm/1/1", `{"decision": "approve"}`)
	if err != nil || evs[len(evs)-1].Status != runtime.StatusCompleted {
		t.Fatalf("approved: %v %+v", err, evs)
	}
	if got := e.archive.calls(); len(got) != 1 || got[0] != `{"thread":"t-9"}` {
		t.Fatalf("archive calls %v", got)
	}
}

// TestConfirmInsideComposition: a confirmation inside a chain agent (a
// sub-run) is pending with its path id and answered like any interrupt.
func TestConfirmInsideComposition(t *testing.T) {
	e := newConfirmEnv(t)
	fin := e.start("c")
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 1 ||
		!strings.HasPrefix(fin.Interrupts[0].ID, "c/h/team/") || !strings.HasSuffix(fin.Interrupts[0].ID, "/confirm/1/1") {
		t.Fatalf("first run: %s %+v", fin.Status, fin.Interrupts)
	}
	evs, err := e.answer(fin.Run, fin.Interrupts[0].ID, `{"decision": "approve"}`)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Status != runtime.StatusCompleted || len(e.send.calls()) != 1 {
		t.Fatalf("approved: %s %s, sent %v", last.Status, last.Output, e.send.calls())
	}
}
