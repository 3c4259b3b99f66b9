package assemble

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/store"
	storemem "github.com/agentc/agentc/runtime/store/memory"
)

const day = 24 * time.Hour

// projectWith is a project root whose agentc.yaml is yaml ("": none).
func projectWith(t *testing.T, yaml string) string {
	t.Helper()
	root := t.TempDir()
	if yaml != "" {
		if err := os.WriteFile(filepath.Join(root, "agentc.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadRetention(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       RetentionSettings
		err        string
	}{
		{name: "none: keep everything", want: RetentionSettings{Interval: time.Hour}},
		{name: "a default and an app", yaml: `
retention:
  max_age: 30d
  max_runs: 20
  session_ttl: 2160h
  idempotency_ttl: 1d
  interval: 15m
  apps:
    support: {max_age: 7d, max_runs: 0}
    billing: {}
`, want: RetentionSettings{
			Default: retention.Policy{MaxAge: 30 * day, MaxRuns: 20, SessionTTL: 90 * day, IdempotencyTTL: day},
			Apps: map[string]retention.Policy{
				"support": {MaxAge: 7 * day, SessionTTL: 90 * day, IdempotencyTTL: day},
				"billing": {MaxAge: 30 * day, MaxRuns: 20, SessionTTL: 90 * day, IdempotencyTTL: day},
			},
			Interval: 15 * time.Minute}},
		{name: "interval off", yaml: "retention: {max_age: 1d, interval: off}\n", want: RetentionSettings{Default: retention.Policy{MaxAge: day}}},
		{name: "a bad age", yaml: "retention: {max_age: 30 days}\n", err: `agentc.yaml: retention: max_age: "30 days" is not a duration`},
		{name: "a bad app value", yaml: "retention: {apps: {x: {session_ttl: -1h}}}\n", err: "retention: apps: x: session_ttl:"},
		{name: "a negative count", yaml: "retention: {max_runs: -2}\n", err: "max_runs: -2 is negative"},
		{name: "a bad interval", yaml: "retention: {interval: sometimes}\n", err: "retention: interval:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadRetention(projectWith(t, tc.yaml))
			if tc.err != "" || err != nil {
				if err == nil || tc.err == "" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if got.Default != tc.want.Default || got.Interval != tc.want.Interval || len(got.Apps) != len(tc.want.Apps) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for app, p := range tc.want.Apps {
				if got.Policy(app) != p {
					t.Errorf("%s: %+v, want %+v", app, got.Policy(app), p)
				}
			}
			if got.Policy("other") != tc.want.Default {
				t.Errorf("an app without an override: %+v", got.Policy("other"))
			}
		})
	}
}

func TestApps(t *testing.T) {
	ctx := context.Background()
	st := storemem.New()
	for _, k := range []store.SessionKey{{App: "b", User: "u", Session: "s"}, {App: "a", User: "u", Session: "s"},
		{App: "a", User: "v", Session: "s"}, {App: "a\x00", User: "u", Session: "s"}, {App: "ab", User: "u", Session: "s"}} {
		if _, _, err := st.GetOrCreateSession(ctx, k, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	apps, err := Apps(ctx, st)
	if want := []string{"a", "a\x00", "ab", "b"}; err != nil || !slices.Equal(apps, want) {
		t.Errorf("Apps = %q, %v; want %q", apps, err, want)
	}
}

// TestRetainerForgetsEverywhere deletes an idle session and checks that
// what the services and protocols keep about it and its run went too.
func TestRetainerForgetsEverywhere(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	old := now.Add(-100 * day)
	st := storemem.New()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := st.GetOrCreateSession(ctx, k, old); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run_1", "run_2", "run_3"} {
		if err := st.CreateRun(ctx, store.Run{ID: id, Session: k, Runnable: "g", Status: store.RunCompleted, Created: old, Updated: old}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutTaskIndex(ctx, "u", "task_1", "run_3"); err != nil {
		t.Fatal(err)
	}
	if _, err := artifact.New(st, func() time.Time { return old }).Save(ctx, artifact.Key{App: "app", User: "u", Session: "s", Name: "a.txt"}, []byte("x"), "text/plain", "run_1"); err != nil {
		t.Fatal(err)
	}
	idem, _ := json.Marshal(map[string]any{"v": 1, "run": "run_1", "created": old.Unix()})
	docs := []store.DocOp{
		{Coll: openai.CollIdempotency, Key: store.DocPath("app", "u", "key-1"), Value: idem},
		{Coll: agui.CollRuns, Key: store.DocPath("app", "u", "s", "r1"), Value: []byte(`{"run":"run_2"}`)},
		{Coll: a2a.CollMessage, Key: store.DocPath("app", "u", "m1"), Value: []byte("task_1")},
		{Coll: memory.CollCursors, Key: store.DocPath("app", "u", "s"), Value: []byte{1}},
		{Coll: recall.CollSessions, Key: store.DocPath("app", "u", "s"), Value: []byte{1, 1, 1}},
		{Coll: a2a.CollTask, Key: store.DocPath("app", "u", "task_1"), Value: []byte(`{"v":1,"id":"task_1","run":"run_3","indexKey":"idx"}`)},
		{Coll: a2a.CollRecent, Key: "idx", Value: []byte(`{"task":"task_1"}`)},
	}
	if err := st.ApplyDocs(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	r := NewRetainer(st, func() time.Time { return now })
	pl, err := r.Plan(ctx, "app", retention.Policy{SessionTTL: 90 * day})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Apply(ctx, pl)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(retention.KindRun) != 3 || res.Count(retention.KindSession) != 1 || res.Count(retention.KindIdempotency) != 3 ||
		res.Count(retention.KindRecord) != 1 {
		t.Errorf("deleted %+v", res.Deleted)
	}
	for _, d := range docs {
		if _, err := st.GetDoc(ctx, d.Coll, d.Key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s document: %v", d.Coll, err)
		}
	}
	if left, _ := st.ListDocs(ctx, artifact.Coll, "", "", 0); len(left) != 0 {
		t.Errorf("artifacts left: %d", len(left))
	}
}

// TestStartRetention runs the server's passes and counts them in the
// metrics; stop waits for the goroutine.
func TestStartRetention(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st := storemem.New()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := st.GetOrCreateSession(ctx, k, now.Add(-2*day)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateRun(ctx, store.Run{ID: "run_1", Session: k, Runnable: "g", Status: store.RunFailed, Created: now, Updated: now.Add(-2 * day)}); err != nil {
		t.Fatal(err)
	}
	m := server.NewMetrics()
	var logs bytes.Buffer
	set := RetentionSettings{Default: retention.Policy{SessionTTL: day}, Interval: time.Millisecond}
	stop := StartRetention(st, "app", set, func() time.Time { return now }, slog.New(slog.NewTextHandler(&logs, nil)), m)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := st.GetSession(ctx, k); errors.Is(err, store.ErrNotFound) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := m.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`agentc_retention_deleted_total{app="app",kind="run"} 1`, `agentc_retention_deleted_total{app="app",kind="session"} 1`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, out.String())
		}
	}
	if !strings.Contains(logs.String(), "runs=1 sessions=1") {
		t.Errorf("log: %s", logs.String())
	}
	// A zero policy starts nothing.
	if err := StartRetention(st, "app", RetentionSettings{Interval: time.Hour}, time.Now, nil, nil)(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionSpecExample reads the retention: example of
// spec/storage.md as agentc.yaml.
func TestRetentionSpecExample(t *testing.T) {
	b, err := os.ReadFile("../../spec/storage.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "## Retention")
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("spec/storage.md, Retention: no yaml example")
	}
	set, err := ReadRetention(projectWith(t, example))
	if err != nil {
		t.Fatal(err)
	}
	want := retention.Policy{MaxAge: 30 * day, MaxRuns: 50, SessionTTL: 90 * day, IdempotencyTTL: day}
	if set.Default != want || set.Interval != time.Hour || set.Policy("support").MaxAge != 7*day || set.Policy("support").MaxRuns != 50 {
		t.Errorf("the spec's example reads as %+v", set)
	}
}
