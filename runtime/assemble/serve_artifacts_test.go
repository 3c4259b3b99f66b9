package assemble

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/store/memory"
)

func TestRunArtifacts(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	now := func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	svc := artifact.New(st, now)
	key := func(user, session, name string) artifact.Key {
		return artifact.Key{App: "support", User: user, Session: session, Name: name}
	}
	save := func(k artifact.Key, data, mime, run string) {
		t.Helper()
		if _, err := svc.Save(ctx, k, []byte(data), mime, run); err != nil {
			t.Fatal(err)
		}
	}
	save(key("ann", "ctx1", "reports/report.md"), "# draft", "text/markdown", "run_1")
	save(key("ann", "ctx1", "reports/report.md"), "# final", "text/markdown", "run_1")
	save(key("ann", "ctx1", "chart.png"), "\x89PNG", "image/png", "run_1")
	save(key("ann", "ctx1", "old.md"), "earlier run", "text/markdown", "run_0")
	save(key("bob", "ctx1", "theirs.md"), "another user", "text/markdown", "run_1")
	save(key("ann", "ctx1", "input/photo.png"), "\x89PNG", "image/png", "run_1") // the request's file, not the run's work

	arts, err := a2aArtifacts(svc)(ctx, a2a.ArtifactRequest{App: "support", User: "ann", Context: "ctx1", Task: "task_1", Run: "run_1",
		Output: json.RawMessage(`"the answer"`)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range arts {
		ids = append(ids, a.ArtifactID)
	}
	want := []string{"output", "chart.png@1", "reports/report.md@1", "reports/report.md@2"}
	if len(ids) != len(want) {
		t.Fatalf("artifacts %q, want %q", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("artifacts %q, want %q", ids, want)
		}
	}
	if p := arts[3].Parts[0]; p.Text == nil || *p.Text != "# final" {
		t.Errorf("text artifact part = %+v", p)
	}
	if p := arts[1].Parts[0]; p.Text != nil || string(p.Raw) != "\x89PNG" || p.MediaType != "image/png" || p.Filename != "chart.png" {
		t.Errorf("binary artifact part = %+v", p)
	}
}
