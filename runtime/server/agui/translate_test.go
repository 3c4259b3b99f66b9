package agui

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentc/agentc/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/translate")

// TestTranslateGolden runs each testdata/translate/*.txtar through a
// translator: the runtime events of events.jsonl (one encoded event a line),
// with the frontend tools of the optional tools section (one name a line)
// and the known state of the optional state section, must give exactly the
// AG-UI events of agui.jsonl. Ids are numbered (msg_1, call_2, ...).
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
	tools := map[string]bool{}
	for _, name := range strings.Fields(string(sections["tools"])) {
		tools[name] = true
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
	tr := newTranslator("thread-1", "run-1", newID, func(name string) bool { return tools[name] })
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
	sse := []byte{}
	for i := range out {
		var err error
		if sse, err = appendSSE(sse, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	verifyStream(t, parseSSE(t, sse), "thread-1", "run-1")
	return b.Bytes()
}

func TestApplyChanges(t *testing.T) {
	state := map[string]json.RawMessage{"list": json.RawMessage(`[1]`), "obj": json.RawMessage(`{"a":1}`), "s": json.RawMessage(`"x"`)}
	ops := applyChanges(state, []runtime.StateChange{
		{Field: "s", Op: "set", Value: json.RawMessage(`"y"`)},
		{Field: "new", Op: "set", Value: json.RawMessage(`null`)},
		{Field: "list", Op: "append", Value: json.RawMessage(`[2,3]`)},
		{Field: "fresh", Op: "append", Value: json.RawMessage(`["a"]`)},
		{Field: "obj", Op: "merge", Value: json.RawMessage(`{"b/c":2,"a~":3}`)},
		{Field: "a/b", Op: "set", Value: json.RawMessage(`1`)},
		{Field: "bad", Op: "set", Value: json.RawMessage(`{`)},
	})
	got, _ := json.Marshal(ops)
	want := `[{"op":"replace","path":"/s","value":"y"},{"op":"add","path":"/new","value":null},` +
		`{"op":"add","path":"/list/-","value":2},{"op":"add","path":"/list/-","value":3},` +
		`{"op":"add","path":"/fresh","value":["a"]},` +
		`{"op":"add","path":"/obj/a~0","value":3},{"op":"add","path":"/obj/b~1c","value":2},` +
		`{"op":"add","path":"/a~1b","value":1}]`
	if string(got) != want {
		t.Fatalf("ops\n got %s\nwant %s", got, want)
	}
	final, _ := json.Marshal(state)
	if wantState := `{"a/b":1,"fresh":["a"],"list":[1,2,3],"new":null,"obj":{"a":1,"a~":3,"b/c":2},"s":"y"}`; string(final) != wantState {
		t.Fatalf("state\n got %s\nwant %s", final, wantState)
	}
}
