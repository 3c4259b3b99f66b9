package editors

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNeovimLSP runs editors/neovim/agentc.lua in a headless Neovim
// against the real `agentc lsp` (built from ../cmd/agentc) and checks that
// the diagnostics of a file with a misspelled reducer arrive with their
// code and position.
func TestNeovimLSP(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nvim is not installed: test/all.sh installs neovim for this test")
		}
		t.Skip("nvim is not installed")
	}
	if testing.Short() {
		t.Skip("builds the agentc binary")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentc")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/agentc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "t.agent")
	if err := os.WriteFile(file, []byte("workflow w\n\nstate S { a: string reduce apend }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lua, _ := filepath.Abs("neovim/agentc.lua")
	script, _ := filepath.Abs("neovim/lsp_test.lua")
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(), "AGENTC_LUA="+lua, "AGENTC_BIN="+bin, "AGENTC_FILE="+file)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.HasPrefix(got, "OK\n") || !strings.Contains(got, "3:28 N201 unknown reducer apend") {
		t.Errorf("neovim diagnostics:\n%s", got)
	}
}
