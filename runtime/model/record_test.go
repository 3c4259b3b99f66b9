package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// liveTool answers from a list, in order.
type liveTool struct {
	outs []json.RawMessage
	errs []error
	n    int
}

func (t *liveTool) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: "live"} }
func (t *liveTool) Effect() runtime.Effect { return runtime.Effect(0) }
func (t *liveTool) Call(context.Context, runtime.ToolRequest) (json.RawMessage, error) {
	i := t.n
	t.n++
	return t.outs[i], t.errs[i]
}

// TestRecordingReplays: what a Recording writes loads as a tool fixture
// whose replay answers the same calls, in the same order, with the same
// outputs and errors (repeated inputs answered in sequence).
func TestRecordingReplays(t *testing.T) {
	calls := []struct {
		args, out string
		err       error
	}{
		{`{"q": "a<b>&c", "n": 5}`, `{"hits":["x: y","é 😀 \"q\"","- dash"],"n":1.5,"ok":true,"none":null}`, nil},
		{`{"q":"again"}`, `"first"`, nil},
		{`{"q":"again"}`, `"second"`, nil},
		{`{"q":"bad"}`, ``, runtime.Errorf(vm.KindUnavailable, "connection refused: %s", "x'y\"z")},
		{`{"q":"plain"}`, ``, errors.New("no kind")},
		{`{"q":"nested","l":[{"a":[1,2]},{}]}`, `{"a":{"b":{"c":[]}}}`, nil},
	}
	live := &liveTool{}
	for _, c := range calls {
		live.outs = append(live.outs, json.RawMessage(c.out))
		live.errs = append(live.errs, c.err)
	}
	rec := NewRecording()
	wrapped := rec.Wrap("search", live)
	for _, c := range calls {
		_, _ = wrapped.Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(c.args)})
	}
	// A canceled call is not recorded.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	live.outs, live.errs = append(live.outs, nil), append(live.errs, context.Canceled)
	_, _ = wrapped.Call(ctx, runtime.ToolRequest{Args: json.RawMessage(`{"q":"gone"}`)})

	if got := rec.Tools(); len(got) != 1 || got[0] != "search" || rec.Fixture("other") != nil {
		t.Fatalf("tools %v", got)
	}
	fx := rec.Fixture("search")
	if strings.Contains(string(fx), "gone") || strings.Count(string(fx), "times: 1") != 1 {
		t.Fatalf("fixture:\n%s", fx)
	}
	loaded, err := LoadToolFixture("search.yaml", fx)
	if err != nil {
		t.Fatalf("%v\n%s", err, fx)
	}
	replay := NewScriptedTool(runtime.ToolSpec{Name: "search"}, 0, loaded)
	for i, c := range calls {
		out, err := replay.Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(c.args)})
		if c.err != nil {
			var ve *vm.Error
			want := vm.KindToolError
			if errors.As(c.err, &ve) {
				want = ve.Kind
			}
			if !errors.As(err, &ve) || ve.Kind != want || !strings.Contains(c.err.Error(), ve.Message) {
				t.Errorf("call %d: error %v, want %v", i, err, c.err)
			}
			continue
		}
		var got, want any
		if err != nil || json.Unmarshal(out, &got) != nil || json.Unmarshal([]byte(c.out), &want) != nil {
			t.Fatalf("call %d: %v %s", i, err, out)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("call %d: replayed %s, recorded %s", i, gb, wb)
		}
	}
}

// TestRecordingWriteDir: one fixture file per called tool; nothing, not
// even the folder, when none was called.
func TestRecordingWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fx")
	rec := NewRecording()
	if paths, err := rec.WriteDir(dir); err != nil || paths != nil {
		t.Fatalf("empty: %v %v", paths, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("empty recording made %s: %v", dir, err)
	}
	live := &liveTool{outs: []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`2`)}, errs: []error{nil, nil}}
	_, _ = rec.Wrap("b", live).Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{}`)})
	_, _ = rec.Wrap("a", live).Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{}`)})
	paths, err := rec.WriteDir(dir)
	if err != nil || len(paths) != 2 || paths[0] != filepath.Join(dir, "a.yaml") || paths[1] != filepath.Join(dir, "b.yaml") {
		t.Fatalf("paths %v, %v", paths, err)
	}
	if b, err := os.ReadFile(paths[1]); err != nil || !bytes.Equal(b, rec.Fixture("b")) {
		t.Fatalf("b.yaml: %v\n%s", err, b)
	}
}

// TestRecordingSave: Save names each file with the line that replays it,
// says when nothing was called, and reports a directory it cannot make.
func TestRecordingSave(t *testing.T) {
	base := t.TempDir()
	var notes []string
	say := func(s string) { notes = append(notes, s) }
	rec := NewRecording()
	rec.Save(filepath.Join(base, "none"), say)
	live := &liveTool{outs: []json.RawMessage{json.RawMessage(`1`)}, errs: []error{nil}}
	_, _ = rec.Wrap("web", live).Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{}`)})
	dir := filepath.Join(base, "fx")
	rec.Save(dir, say)
	blocker := filepath.Join(base, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec.Save(filepath.Join(blocker, "sub"), say)
	p := filepath.Join(dir, "web.yaml")
	want := []string{
		"--record: no http, exec or mcp tool was called; nothing written",
		fmt.Sprintf("recorded %s (replay: tool web replay %q)", p, filepath.ToSlash(p)),
	}
	if len(notes) != 3 || notes[0] != want[0] || notes[1] != want[1] || !strings.HasPrefix(notes[2], "--record: mkdir ") {
		t.Fatalf("notes:\n%s", strings.Join(notes, "\n"))
	}
}
