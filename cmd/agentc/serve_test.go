package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/assemble"
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

// TestServeSettingsPrecedence: flag > AGENTC_* > agentc.yaml > serve block
// > default, setting by setting.
func TestServeSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.agent"), []byte(serveTestSource), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	prog, err := loadProgram(&app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, "w.agent")
	if err != nil {
		t.Fatal(err)
	}
	const yamlAll = "serve:\n  addr: 127.0.0.1:7002\n  data: yaml-data\n  tokens: {ytok: yuser}\n  max_runs: 7\n  run_timeout: 2m\n"
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		flags   serveFlags
		changed []string
		check   func(s serveSettings) bool
		want    string
	}{
		{"serve block", "", nil, serveFlags{}, nil,
			func(s serveSettings) bool {
				return s.addr == "127.0.0.1:7001" && s.data == ".agentc" && len(s.tokens) == 0
			}, "block addr, default data"},
		{"env() in the serve block", "", map[string]string{"W_ADDR": "127.0.0.1:7005"}, serveFlags{}, nil,
			func(s serveSettings) bool { return s.addr == "127.0.0.1:7005" }, "the block's env() value"},
		{"agentc.yaml over the block", yamlAll, nil, serveFlags{}, nil,
			func(s serveSettings) bool {
				return s.addr == "127.0.0.1:7002" && s.data == "yaml-data" && s.tokens["ytok"] == "yuser" &&
					s.limits.MaxRuns == 7 && s.limits.RunTimeout == 2*time.Minute
			}, "yaml values"},
		{"env over agentc.yaml", yamlAll, map[string]string{"AGENTC_ADDR": "127.0.0.1:7003", "AGENTC_TOKENS": "etok=euser", "AGENTC_MAX_RUNS": "9", "AGENTC_DATA": "env-data"}, serveFlags{}, nil,
			func(s serveSettings) bool {
				return s.addr == "127.0.0.1:7003" && s.data == "env-data" && s.tokens["etok"] == "euser" && s.tokens["ytok"] == "" && s.limits.MaxRuns == 9
			}, "env values"},
		{"flags over env", yamlAll, map[string]string{"AGENTC_ADDR": "127.0.0.1:7003", "AGENTC_TOKENS": "etok=euser"},
			serveFlags{addr: "127.0.0.1:7004", tokens: []string{"ftok=fuser", "gtok=guser"}, maxRuns: 3, open: true},
			[]string{"addr", "token", "max-runs", "open"},
			func(s serveSettings) bool {
				return s.addr == "127.0.0.1:7004" && len(s.tokens) == 2 && s.tokens["gtok"] == "guser" && s.limits.MaxRuns == 3 && s.open
			}, "flag values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.yaml != "" {
				if err := os.WriteFile(filepath.Join(root, "agentc.yaml"), []byte(tc.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []string{"AGENTC_ADDR", "AGENTC_DATA", "AGENTC_TOKENS", "AGENTC_MAX_RUNS", "AGENTC_OPEN", "W_ADDR"} {
				t.Setenv(k, tc.env[k]) // restored after the test
				if _, ok := tc.env[k]; !ok {
					os.Unsetenv(k)
				}
			}
			changed := func(flag string) bool {
				for _, c := range tc.changed {
					if c == flag {
						return true
					}
				}
				return false
			}
			s, err := resolveServe(changed, tc.flags, prog, root)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Fatalf("want %s, got %+v", tc.want, s)
			}
		})
	}
	eps := endpoints(prog)
	if len(eps) != 1 || eps[bytecode.ProtoOpenAI].path != "/oai" || assemble.AttrString(prog, eps[bytecode.ProtoOpenAI].attrs, "model", nil) != "w-model" {
		t.Fatalf("endpoints %+v", eps)
	}
}

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
