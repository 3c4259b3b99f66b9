package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/internal/upgradetest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store/pebble"
)

const supportInput = "prod.example.com fails with x509: certificate signed by unknown authority"

// upgradeProject copies the support example into a fresh project and
// applies variant v ("": none).
func upgradeProject(t *testing.T, v string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := upgradetest.CopyExamples("../../examples", root); err != nil {
		t.Fatal(err)
	}
	if v != "" {
		if err := upgradetest.Find(v).Rewrite(root); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// waitingRun runs the support example in root until it waits at approve
// and returns the run id.
func waitingRun(t *testing.T, root string, env []string, session string) string {
	t.Helper()
	r := runAgentc(t, root, env, "run", "support/support.agent", "--input", supportInput, "--session", session, "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fin, err := runtime.DecodeEvent([]byte(lines[len(lines)-1]))
	if r.code != exitInterrupted || err != nil || fin.Status != runtime.StatusInterrupted {
		t.Fatalf("run: exit %d (%v)\n%s", r.code, err, r.stderr)
	}
	return fin.Run
}

// latestHash is the program hash of run's last checkpoint in the Pebble
// store of root.
func latestHash(t *testing.T, root, run string) string {
	t.Helper()
	st, err := pebble.Open(filepath.Join(root, ".agentc"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cp, err := st.LatestCheckpoint(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return cp.ProgramHash
}

func fileHash(t *testing.T, root string) string {
	t.Helper()
	p := runtimetest.Compile(t, os.DirFS(root), "support/support.agent")
	return hex.EncodeToString(p.Hash[:])
}

// TestUpgradeE2E: runs of the support example wait at approve; the file
// changes. A run resumed without --upgrade finishes on the program it
// started with (kept in the store); --upgrade moves a run when the edit is
// compatible (an edited prompt) and refuses, with both positions, when it
// changes approve's resume type, the run keeping its program.
func TestUpgradeE2E(t *testing.T) {
	root := upgradeProject(t, "")
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, ".agentc"))
	oldHash := fileHash(t, root)
	pinned := waitingRun(t, root, env, "pinned")
	moved := waitingRun(t, root, env, "moved")
	refused := waitingRun(t, root, env, "refused")
	answer := `{"approved": true}`

	// An incompatible edit: --upgrade is refused with the report.
	if err := upgradetest.Find("resume-type").Rewrite(root); err != nil {
		t.Fatal(err)
	}
	r := runAgentc(t, root, env, "run", "support/support.agent", "--resume", refused, "--value", answer, "--upgrade")
	if r.code != exitFail || !strings.Contains(r.stderr, "U706") || !strings.Contains(r.stderr, "old:support/support.agent:73:8") ||
		!strings.Contains(r.stderr, "support/support.agent:75:8") || !strings.Contains(r.stderr, "keeps its program") {
		t.Fatalf("--upgrade to an incompatible edit: exit %d\n%s", r.code, r.stderr)
	}
	// Without --upgrade the runs finish on the program they started with.
	for _, run := range []string{refused, pinned} {
		r = runAgentc(t, root, env, "run", "support/support.agent", "--resume", run, "--value", answer)
		if r.code != 0 {
			t.Fatalf("resume %s on its own program: exit %d\n%s", run, r.code, r.stderr)
		}
		if got := latestHash(t, root, run); got != oldHash {
			t.Errorf("run %s finished on %.12s, want its own %.12s", run, got, oldHash)
		}
	}

	// A compatible edit: --upgrade moves the run, which finishes there.
	root2 := upgradeProject(t, "prompt")
	if err := os.WriteFile(filepath.Join(root, "support", "support.agent"), mustRead(t, filepath.Join(root2, "support", "support.agent")), 0o644); err != nil {
		t.Fatal(err)
	}
	newHash := fileHash(t, root)
	r = runAgentc(t, root, env, "run", "support/support.agent", "--resume", moved, "--value", answer, "--upgrade")
	if r.code != 0 {
		t.Fatalf("--upgrade to a compatible edit: exit %d\n%s", r.code, r.stderr)
	}
	if got := latestHash(t, root, moved); got != newHash || got == oldHash {
		t.Errorf("the moved run finished on %.12s, want the new program %.12s", got, newHash)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUpgradeCheckE2E: agentc upgrade-check's verdicts and exit codes.
func TestUpgradeCheckE2E(t *testing.T) {
	old := upgradeProject(t, "")
	oldFile := filepath.Join(old, "support", "support.agent")
	for _, v := range upgradetest.Variants {
		t.Run(v.Name, func(t *testing.T) {
			nw := filepath.Join(upgradeProject(t, v.Name), "support", "support.agent")
			r := runAgentc(t, old, cleanEnv(), "upgrade-check", oldFile, nw)
			want := 0
			if !v.Compatible {
				want = 1
			}
			if r.code != want || !v.Compatible && !strings.Contains(r.stderr, v.Code) {
				t.Fatalf("exit %d, want %d\n%s", r.code, want, r.stderr)
			}
			r = runAgentc(t, old, cleanEnv(), "upgrade-check", "--json", oldFile, nw)
			if r.code != want || !strings.Contains(r.stdout, `"diagnostics"`) {
				t.Fatalf("--json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	r := runAgentc(t, old, cleanEnv(), "upgrade-check", oldFile, filepath.Join(old, "missing.agent"))
	if r.code != exitUsage {
		t.Fatalf("a missing file: exit %d\n%s", r.code, r.stderr)
	}
}

// TestServePinnedE2E: a run of the support example waits at approve; the
// file changes so that approve's resume type differs; agentc serve
// --upgrade-waiting, asked over the OpenAI-compatible endpoint, cannot move
// the run (the report is logged) and finishes it on the program it
// started with, loaded from the store.
func TestServePinnedE2E(t *testing.T) {
	root := upgradeProject(t, "")
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, ".agentc"))
	oldHash := fileHash(t, root)
	r := runAgentc(t, root, env, "run", "support/support.agent", "--input", supportInput, "--session", "s1", "--user", "u", "--json")
	if r.code != exitInterrupted {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if err := upgradetest.Find("resume-type").Rewrite(root); err != nil {
		t.Fatal(err)
	}
	cmd, addr, _ := startServeArgs(t, root, env, "support/support.agent", "--token", "tok=u", "--upgrade-waiting")
	body := `{"model": "support", "messages": [{"role": "user", "content": "{\"approved\": true}"}]}`
	req, err := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentc-Session", "s1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	run := resp.Header.Get("X-Agentc-Run")
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if resp.StatusCode != 200 || run == "" || resp.Header.Get("X-Agentc-Status") != "completed" {
		t.Fatalf("the answer over OpenAI: %d %v\n%s", resp.StatusCode, resp.Header, out)
	}
	if got := latestHash(t, root, run); got != oldHash {
		t.Errorf("the run finished on %.12s, want its own program %.12s", got, oldHash)
	}
}
