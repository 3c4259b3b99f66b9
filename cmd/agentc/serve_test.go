package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const serveTestSource = `workflow w "W"

model m { provider = openai, name = "x" }

agent a llm "A" { model = m }

serve {
  run    = a
  addr   = env("W_ADDR", "127.0.0.1:7001")
  openai { path = "/oai", model = "w-model" }
}
`

// TestServeRefuses: usage errors exit 2 before anything listens.
func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.agent"), []byte(serveTestSource), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("AGENTC_TOKENS", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tokens", []string{"serve", "w.agent", "--data", "d"}, "no bearer tokens"},
		{"open off loopback", []string{"serve", "w.agent", "--data", "d", "--open", "--addr", "0.0.0.0:7010"}, "loopback"},
		{"bad token entry", []string{"serve", "w.agent", "--data", "d", "--token", "justatoken"}, "TOKEN=USER"},
		{"open with tokens", []string{"serve", "w.agent", "--data", "d", "--open", "--token", "t=u"}, "--open serves without authentication and takes no tokens"},
		{"bad public url", []string{"serve", "w.agent", "--data", "d", "--token", "t=u", "--public-url", "agents.example.com"}, "--public-url"},
		{"bad trusted proxy", []string{"serve", "w.agent", "--data", "d", "--token", "t=u", "--trusted-proxy", "10.0.0.0/33"}, "--trusted-proxy"},
		{"bad log format", []string{"serve", "w.agent", "--data", "d", "--token", "t=u", "--log", "xml"}, "--log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runWith(tc.args, &app{stdout: &out, stderr: &errb})
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), exitUsage, tc.want)
			}
		})
	}
}
