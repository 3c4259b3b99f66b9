package agui

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/translate")

// TestTranslateGolden runs each testdata/translate/*.txtar through a
// translator: the runtime events of events.jsonl (one encoded event a line),
// with the frontend tools of the optional tools section (one name a line)
// the known state of the optional state section, and the run's checkpointed
// state at its end of the optional latest section (what Runner.LatestState
// reads), must give exactly the AG-UI events of agui.jsonl. Ids are numbered (msg_1, call_2, ...).
func TestTranslateGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/translate/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			got := translateAll(t, sections)
			if *update {
				replaced := false
				for i := range ar.Files {
					if ar.Files[i].Name == "agui.jsonl" {
						ar.Files[i].Data, replaced = got, true
					}
				}
				if !replaced {
					ar.Files = append(ar.Files, txtar.File{Name: "agui.jsonl", Data: got})
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := sections["agui.jsonl"]; !bytes.Equal(got, want) {
				t.Errorf("AG-UI events differ (go test -update rewrites them)\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func translateAll(t *testing.T, sections map[string][]byte) []byte {
	t.Helper()
	var tools []tool
	for _, name := range strings.Fields(string(sections["tools"])) {
		tools = append(tools, tool{Name: name})
	}
	state := map[string]json.RawMessage{}
	if s := bytes.TrimSpace(sections["state"]); len(s) > 0 {
		if err := json.Unmarshal(s, &state); err != nil {
			t.Fatalf("state: %v", err)
		}
	}
	n := 0
	newID := func(prefix string) string {
		n++
		return prefix + strconv.Itoa(n)
	}
	tr := newTranslator("thread-1", "run-1", newID, tools)
	if s := bytes.TrimSpace(sections["latest"]); len(s) > 0 {
		var latest map[string]json.RawMessage
		if err := json.Unmarshal(s, &latest); err != nil {
			t.Fatalf("latest: %v", err)
		}
		tr.latest = func(runRef) (map[string]json.RawMessage, bool) { return latest, true }
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := tr.start(at, state)
	var lastTime time.Time
	for i, line := range bytes.Split(bytes.TrimSpace(sections["events.jsonl"]), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := runtime.DecodeEvent(line)
		if err != nil {
			t.Fatalf("events.jsonl line %d: %v", i+1, err)
		}
		lastTime = e.Time
		out = append(out, tr.translate(e)...)
	}
	out = append(out, tr.end(lastTime, "internal", "the run's event stream ended before the run finished")...)
	var b bytes.Buffer
	for i := range out {
		line, err := json.Marshal(&out[i])
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	// Every golden is also a valid stream for the client's verifier.
	rec := httptest.NewRecorder()
	sse := server.NewSSE(rec, nil, nil, 0)
	for i := range out {
		line, err := json.Marshal(&out[i])
		if err != nil {
			t.Fatal(err)
		}
		sse.Frame(line)
	}
	if !sse.Flush() {
		t.Fatal(sse.Err())
	}
	verifyStream(t, parseSSE(t, rec.Body.Bytes()), "thread-1", "run-1")
	return b.Bytes()
}

// BenchmarkStateDelta translates the state_delta events of a 200-step
// conversation (each step appends one message to a list that starts with
// 100, and sets a counter) into STATE_DELTA events.
func BenchmarkStateDelta(b *testing.B) {
	msg := json.RawMessage(`{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 16) + `"}`)
	list := make([]json.RawMessage, 100)
	for i := range list {
		list[i] = msg
	}
	msgs, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	start := map[string]json.RawMessage{"messages": msgs, "turn": json.RawMessage(`0`)}
	evs := make([]*runtime.Event, 200)
	for i := range evs {
		evs[i] = &runtime.Event{ID: "E" + strconv.Itoa(i), Kind: runtime.EventStateDelta, Changes: []runtime.StateChange{
			{Field: "messages", Op: "append", Value: json.RawMessage(`[` + string(msg) + `]`)},
			{Field: "turn", Op: "set", Value: json.RawMessage(strconv.Itoa(i + 1))},
		}}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		tr := newTranslator("thread-1", "run-1", func(p string) string { return p }, nil)
		tr.start(at, start)
		for _, e := range evs {
			if len(tr.translate(e)) != 1 {
				b.Fatal("no STATE_DELTA")
			}
		}
	}
}

// TestInterruptSnapshot: the STATE_SNAPSHOT before an interrupt outcome is
// the run's checkpointed state as the Runner reads it, sent only when a
// STATE_DELTA went out since the last snapshot and the state could be read.
func TestInterruptSnapshot(t *testing.T) {
	delta := &runtime.Event{ID: "E1", Kind: runtime.EventStateDelta, Changes: []runtime.StateChange{{Field: "n", Op: runtime.ChangeSet, Value: json.RawMessage(`2`)}}}
	paused := &runtime.Event{ID: "E2", Kind: runtime.EventRunFinished, Status: runtime.StatusInterrupted,
		Interrupts: []runtime.InterruptInfo{{ID: "g/ask", Node: "ask", Prompt: "?"}}}
	tests := []struct {
		name   string
		events []*runtime.Event
		latest func() (map[string]json.RawMessage, bool)
		want   string // the snapshot before RUN_FINISHED, "" for none
	}{
		{"changed", []*runtime.Event{delta, paused}, func() (map[string]json.RawMessage, bool) {
			return map[string]json.RawMessage{"n": json.RawMessage(`2`), "s": json.RawMessage(`"x"`)}, true
		}, `{"n":2,"s":"x"}`},
		{"unchanged", []*runtime.Event{paused}, func() (map[string]json.RawMessage, bool) {
			t.Error("the state was read though nothing changed")
			return nil, false
		}, ""},
		{"unreadable", []*runtime.Event{delta, paused}, func() (map[string]json.RawMessage, bool) { return nil, false }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTranslator("thread-1", "run-1", func(p string) string { return p }, nil)
			tr.latest = func(runRef) (map[string]json.RawMessage, bool) { return tt.latest() }
			out := tr.start(time.Time{}, map[string]json.RawMessage{"n": json.RawMessage(`1`)})
			for _, e := range tt.events {
				out = append(out, tr.translate(e)...)
			}
			if len(out) < 2 || out[len(out)-1].Type != RunFinished {
				t.Fatalf("events %+v", out)
			}
			got := ""
			if prev := out[len(out)-2]; prev.Type == StateSnapshot {
				got = string(prev.Snapshot)
			}
			if got != tt.want {
				t.Fatalf("snapshot before the outcome %q, want %q", got, tt.want)
			}
		})
	}
}
