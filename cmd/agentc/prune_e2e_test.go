package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime/retention"
)

// keepSource has a graph that completes and one that waits on an
// interrupt, under the app "keep".
const keepSource = `workflow keep "runs for agentc prune"

state S {
  q  : string
  a  : string = ""
  ok : bool?
}

graph echo(S) input q output a {
  node say = set { a = q }
  start -> say
  say -> end
}

graph wait(S) input q output a {
  node ask = interrupt "Go on?" returns bool into ok
  start -> ask
  ask -> end
}
`

// newProject is a project folder (it has a .git) holding files, given as
// name, source pairs.
func newProject(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(root, files[i]), []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// pruneProject is a project holding keepSource, and agentc with env in it.
func pruneProject(t *testing.T, env []string) (root string, agentc func(want int, args ...string) result) {
	t.Helper()
	root = newProject(t, "keep.agent", keepSource)
	return root, func(want int, args ...string) result {
		t.Helper()
		r := runAgentc(t, root, env, args...)
		if r.code != want {
			t.Fatalf("agentc %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
		return r
	}
}

func writeYAML(t *testing.T, root, yaml string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "agentc.yaml"), yaml)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runsOf counts the runs `sessions show` lists.
func runsOf(t *testing.T, agentc func(int, ...string) result, session string) int {
	t.Helper()
	return len(regexp.MustCompile(`(?m)^  run_`).FindAllString(agentc(0, "sessions", "show", session, "--app", "keep").stdout, -1))
}

// TestPrune runs the real binary on a Pebble and a PostgreSQL store:
// --dry-run deletes nothing, prune deletes what it planned, and a run
// waiting on an interrupt survives with its session and still resumes.
func TestPrune(t *testing.T) {
	for _, backend := range []string{"pebble", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			env := cleanEnv("AGENTC_DATA=" + filepath.Join(t.TempDir(), "data"))
			if backend == "postgres" {
				env = cleanEnv("AGENTC_STORE=" + pgtest.WithSchema(t, pgtest.URL(t)))
			}
			root, agentc := pruneProject(t, env)
			for _, in := range []string{"one", "two", "three"} {
				agentc(0, "run", "keep.agent", "--run", "echo", "--input", in)
			}
			agentc(3, "run", "keep.agent", "--run", "wait", "--input", "w", "--session", "waiting")
			agentc(0, "run", "keep.agent", "--run", "echo", "--input", "four", "--session", "waiting")
			agentc(0, "run", "keep.agent", "--run", "echo", "--input", "five", "--session", "done")

			writeYAML(t, root, "retention:\n  max_runs: 1\n")
			var rep retention.Report
			if err := json.Unmarshal([]byte(agentc(0, "prune", "--dry-run", "--json").stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Delete) != 2 || rep.Delete[0].ID != "main" || rep.Delete[0].Reason != "max_runs" || rep.Deleted["run"] != 0 {
				t.Fatalf("dry run: %+v", rep)
			}
			if n := runsOf(t, agentc, "main"); n != 3 {
				t.Fatalf("a dry run deleted: %d runs left in main", n)
			}
			if err := json.Unmarshal([]byte(agentc(0, "prune", "--json").stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Deleted["run"] != 2 || runsOf(t, agentc, "main") != 1 || runsOf(t, agentc, "waiting") != 2 {
				t.Fatalf("prune: %+v", rep)
			}

			writeYAML(t, root, "retention:\n  session_ttl: 1ns\n")
			r := agentc(0, "prune")
			if !strings.Contains(r.stdout, "deleted 3 runs, 2 sessions") ||
				!regexp.MustCompile(`kept session keep/cli/waiting: idle \S+, but run run_\w+ \(interrupted\) is kept`).MatchString(r.stdout) {
				t.Fatalf("prune by session_ttl:\n%s", r.stdout)
			}
			if list := agentc(0, "sessions", "list", "--app", "keep").stdout; strings.Count(list, "\n") != 1 || !strings.Contains(list, "waiting") {
				t.Fatalf("sessions left:\n%s", list)
			}
			agentc(1, "sessions", "show", "main", "--app", "keep")
			agentc(0, "run", "keep.agent", "--resume", "latest", "--session", "waiting", "--value", "true")
		})
	}
}

// TestServeRetention: agentc serve applies its app's policy in the
// background, counts what it deleted in /metrics, and stops the pass
// before it closes the store.
func TestServeRetention(t *testing.T) {
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(t.TempDir(), "data"))
	root, agentc := pruneProject(t, env)
	for _, in := range []string{"one", "two", "three"} {
		agentc(0, "run", "keep.agent", "--run", "echo", "--input", in)
	}
	writeFile(t, filepath.Join(root, "serve.agent"), strings.Replace(keepSource, "graph wait", "graph unserved", 1)+"\nserve { run = echo }\n")
	writeYAML(t, root, "retention:\n  max_runs: 1\n  interval: 50ms\n")
	cmd, addr, banner := startServeFile(t, root, env, "serve.agent")
	if !strings.Contains(banner(), "retention max_runs 1 every 50ms") {
		t.Errorf("banner: %s", banner())
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(metrics(t, addr), `agentc_retention_deleted_total{app="keep",kind="run"} 2`) {
		if time.Now().After(deadline) {
			t.Fatalf("no retention pass deleted the two older runs:\n%s", metrics(t, addr))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The server holds the Pebble store: prune by hand says who applies it.
	if r := agentc(1, "prune"); !strings.Contains(r.stderr, "held by agentc serve") || !strings.Contains(r.stderr, "applies its app's retention policy itself") {
		t.Errorf("prune beside the server:\n%s", r.stderr)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, banner())
	}
	if n := runsOf(t, agentc, "main"); n != 1 {
		t.Errorf("runs left in main: %d", n)
	}
}
