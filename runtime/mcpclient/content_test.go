package mcpclient_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/runtimetest"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

const contentSource = `workflow kb
model fast { provider = openai, name = "m" }
tool report "Reports progress" {
  input  { q: string }
  effect = read_only
  run    = mcp { RUN, tool = "report" }
}
tool picture "Draws" {
  input  { q: string }
  effect = read_only
  run    = mcp { RUN, tool = "picture" }
}
tool gallery "Draws many" {
  input  { q: string }
  effect = read_only
  run    = mcp { RUN, tool = "gallery" }
}
agent helper llm { model = fast, tools = [report, picture, gallery] }
`

// allEvents runs the agent once and returns every event it streamed;
// onProgress sees each tool_progress event as it arrives.
func allEvents(t *testing.T, r *runtime.Runner, onProgress func(*runtime.Event)) []*runtime.Event {
	t.Helper()
	ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: "s", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	var out []*runtime.Event
	for e := range ch {
		if e.Kind == runtime.EventToolProgress && onProgress != nil {
			onProgress(e)
		}
		out = append(out, e)
	}
	return out
}

// TestProgressAndContents: a server's progress notifications become
// tool_progress events of the call, between its tool_call and its
// tool_result; image and embedded-resource contents are saved as
// artifacts of the session and referenced from the result the model sees;
// a resource link is referenced, not fetched. Notifications are handled
// apart from responses, so one processed after the result is dropped: the
// HTTP server (in process) answers only once the client saw its progress,
// the stdio one does not wait and may lose some.
func TestProgressAndContents(t *testing.T) {
	rec := &recorder{progressed: make(chan struct{})}
	sw := newSwap(rec)
	hs := httptest.NewServer(sw)
	defer hs.Close()
	for _, tr := range []struct{ name, run string }{{"http", httpRun(hs.URL)}, {"stdio", stdioRun(t)}} {
		t.Run(tr.name, func(t *testing.T) {
			prog := runtimetest.CompileSource(t, "kb.agent", strings.ReplaceAll(contentSource, "RUN", tr.run))
			env := map[string]string{"KB_TOKEN": "t", "AGENTC_ALLOW_HOSTS": "127.0.0.1:*"}
			st := memstore.New()
			mk := func(tool string) *runtime.Runner {
				r, err := assemble.New(st, assemble.Options{Program: prog, Verified: true, Root: t.TempDir(),
					Env:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
					Models: map[string]runtime.Model{"fast": &model{tool: tool, args: `{"q":"cats"}`}}, Warn: func(string) {}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close(context.Background()) })
				return r
			}

			seen := 0
			evs := allEvents(t, mk("report"), func(*runtime.Event) {
				if seen++; seen == 2 && tr.name == "http" {
					close(rec.progressed)
				}
			})
			var kinds []string
			var progress []*runtime.Event
			var callID string
			for _, e := range evs {
				switch e.Kind {
				case runtime.EventToolCall, runtime.EventToolResult:
					kinds = append(kinds, string(e.Kind))
					callID = e.ToolCall.ID
				case runtime.EventToolProgress:
					kinds = append(kinds, string(e.Kind))
					progress = append(progress, e)
				}
			}
			want := "tool_call tool_progress tool_progress tool_result"
			if tr.name == "stdio" {
				want = "tool_call " + strings.Repeat("tool_progress ", len(progress)) + "tool_result"
			}
			if got := strings.Join(kinds, " "); got != want || len(progress) > 2 {
				t.Fatalf("events: %s", got)
			}
			if len(progress) == 2 { // stdio: the notifications may lose the race
				p := progress[1]
				if p.ToolCall == nil || p.ToolCall.ID != callID || p.ToolCall.Name != "report" || p.Author != "helper" ||
					p.Progress.Progress != 2 || p.Progress.Total != 2 || p.Progress.Message != "step 2 of cats" || p.Persisted {
					t.Fatalf("progress event %+v %+v", p, p.Progress)
				}
			}

			evs = allEvents(t, mk("picture"), nil)
			var res *runtime.Event
			for _, e := range evs {
				if e.Kind == runtime.EventToolResult {
					res = e
				}
			}
			if res == nil || res.Error != nil {
				t.Fatalf("tool_result %+v", res)
			}
			out := string(res.Result)
			for _, want := range []string{"a picture of cats", "[artifact mcp/picture/c1-1.png revision 1: image/png, 9 bytes]",
				"[artifact mcp/picture/c1-2.csv revision 1: text/csv, 8 bytes]", "[resource https://example.test/big.bin: application/octet-stream]"} {
				if !strings.Contains(out, want) {
					t.Errorf("result %s lacks %q", out, want)
				}
			}
			// At most 16 contents of one result are saved.
			for _, e := range allEvents(t, mk("gallery"), nil) {
				if e.Kind == runtime.EventToolResult {
					out := string(e.Result)
					if strings.Count(out, "[artifact mcp/gallery/") != 16 || strings.Count(out, "not saved: more than 16 contents") != 2 {
						t.Errorf("gallery: %s", out)
					}
				}
			}
			svc := artifact.New(st, nil)
			a, err := svc.Get(context.Background(), artifact.Key{App: res.App, User: "u", Session: "s", Name: "mcp/picture/c1-1.png"}, 1)
			if err != nil || string(a.Data) != "\x89PNG fake" || a.MimeType != "image/png" || a.Run != res.Run {
				t.Fatalf("artifact: %v %+v", err, a)
			}
		})
	}
}
