package assemble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/runtimetest"
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
	prog := runtimetest.CompileSource(t, "w.agent", serveTestSource)
	const yamlAll = "serve:\n  addr: 127.0.0.1:7002\n  data: yaml-data\n  tokens: {ytok: yuser}\n  max_runs: 7\n  run_timeout: 2m\n"
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		flags   ServeFlags
		changed []string
		check   func(s ServeSettings) bool
		want    string
	}{
		{"upgrade_waiting in agentc.yaml", "serve:\n  upgrade_waiting: true\n", nil, ServeFlags{}, nil,
			func(s ServeSettings) bool { return s.UpgradeWaiting }, "upgrade waiting runs"},
		{"--upgrade-waiting=false over AGENTC_UPGRADE_WAITING", "", map[string]string{"AGENTC_UPGRADE_WAITING": "true"}, ServeFlags{}, []string{"upgrade-waiting"},
			func(s ServeSettings) bool { return !s.UpgradeWaiting }, "the flag's false"},
		{"upgrade off by default", "", nil, ServeFlags{}, nil,
			func(s ServeSettings) bool { return !s.UpgradeWaiting }, "no upgrade"},
		{"serve block", "", nil, ServeFlags{}, nil,
			func(s ServeSettings) bool {
				return s.Addr == "127.0.0.1:7001" && s.Data == ".agentc" && s.Store == ".agentc" && len(s.Tokens) == 0
			}, "block addr, default data, the Pebble store in it"},
		{"env() in the serve block", "", map[string]string{"W_ADDR": "127.0.0.1:7005"}, ServeFlags{}, nil,
			func(s ServeSettings) bool { return s.Addr == "127.0.0.1:7005" }, "the block's env() value"},
		{"agentc.yaml over the block", yamlAll, nil, ServeFlags{}, nil,
			func(s ServeSettings) bool {
				return s.Addr == "127.0.0.1:7002" && s.Data == "yaml-data" && s.Store == "yaml-data" && s.Tokens["ytok"] == "yuser" &&
					s.Limits.MaxRuns == 7 && s.Limits.RunTimeout == 2*time.Minute
			}, "yaml values"},
		{"env over agentc.yaml", yamlAll, map[string]string{"AGENTC_ADDR": "127.0.0.1:7003", "AGENTC_TOKENS": "etok=euser", "AGENTC_MAX_RUNS": "9", "AGENTC_DATA": "env-data"}, ServeFlags{}, nil,
			func(s ServeSettings) bool {
				return s.Addr == "127.0.0.1:7003" && s.Data == "env-data" && s.Tokens["etok"] == "euser" && s.Tokens["ytok"] == "" && s.Limits.MaxRuns == 9
			}, "env values"},
		{"store: in agentc.yaml", "store: postgres://y@127.0.0.1/db\n" + yamlAll, nil, ServeFlags{}, nil,
			func(s ServeSettings) bool { return s.Store == "postgres://y@127.0.0.1/db" && s.Data == "yaml-data" }, "the yaml store"},
		{"AGENTC_STORE over agentc.yaml", "store: postgres://y@127.0.0.1/db\n", map[string]string{"AGENTC_STORE": "/srv/env-store"}, ServeFlags{}, nil,
			func(s ServeSettings) bool { return s.Store == "/srv/env-store" && s.Data == ".agentc" }, "the env store"},
		{"--store over AGENTC_STORE", "", map[string]string{"AGENTC_STORE": "/srv/env-store"}, ServeFlags{Store: "postgresql://f@127.0.0.1/db"}, []string{"store"},
			func(s ServeSettings) bool { return s.Store == "postgresql://f@127.0.0.1/db" }, "the flag store"},
		{"push hosts: yaml, env over yaml, flag over env", "serve:\n  push_hosts: [hooks.example.com]\n", nil, ServeFlags{}, nil,
			func(s ServeSettings) bool { return len(s.PushHosts) == 1 && s.PushHosts[0] == "hooks.example.com" }, "the yaml hosts"},
		{"AGENTC_PUSH_HOSTS", "serve:\n  push_hosts: [hooks.example.com]\n", map[string]string{"AGENTC_PUSH_HOSTS": "a.example.com, 127.0.0.1:*"}, ServeFlags{}, nil,
			func(s ServeSettings) bool { return len(s.PushHosts) == 2 && s.PushHosts[1] == "127.0.0.1:*" }, "the env hosts, trimmed"},
		{"--push-host", "", map[string]string{"AGENTC_PUSH_HOSTS": "a.example.com"}, ServeFlags{PushHosts: []string{"f.example.com"}}, []string{"push-host"},
			func(s ServeSettings) bool { return len(s.PushHosts) == 1 && s.PushHosts[0] == "f.example.com" }, "the flag hosts"},
		{"no push hosts", "", nil, ServeFlags{}, nil,
			func(s ServeSettings) bool { return len(s.PushHosts) == 0 }, "push off"},
		{"flags over env", yamlAll, map[string]string{"AGENTC_ADDR": "127.0.0.1:7003", "AGENTC_TOKENS": "etok=euser"},
			ServeFlags{Addr: "127.0.0.1:7004", Tokens: []string{"ftok=fuser", "gtok=guser"}, MaxRuns: 3, Open: true},
			[]string{"addr", "token", "max-runs", "open"},
			func(s ServeSettings) bool {
				return s.Addr == "127.0.0.1:7004" && len(s.Tokens) == 2 && s.Tokens["gtok"] == "guser" && s.Limits.MaxRuns == 3 && s.Open
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
			for _, k := range []string{"AGENTC_ADDR", "AGENTC_DATA", "AGENTC_TOKENS", "AGENTC_MAX_RUNS", "AGENTC_OPEN", "AGENTC_STORE", "AGENTC_PUSH_HOSTS", "W_ADDR"} {
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
			flags := tc.flags
			flags.Set = changed
			s, err := ResolveServe(flags, prog, root, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Fatalf("want %s, got %+v", tc.want, s)
			}
		})
	}
	eps := Endpoints(prog)
	if len(eps) != 1 || eps[bytecode.ProtoOpenAI].Path != "/oai" || prog.AttrString(eps[bytecode.ProtoOpenAI].Attrs, "model", nil) != "w-model" {
		t.Fatalf("endpoints %+v", eps)
	}
}

// TestEndpoints: without a serve block (or with one that configures no
// protocol) all four protocols are served at their default paths; a block
// that configures some serves only those.
func TestEndpoints(t *testing.T) {
	tests := []struct {
		name  string
		serve string
		want  map[bytecode.ProtocolKind]string
	}{
		{"no serve block", "", map[bytecode.ProtocolKind]string{
			bytecode.ProtoAGUI: "/agui", bytecode.ProtoA2A: "/a2a", bytecode.ProtoOpenAI: "/v1", bytecode.ProtoMCP: "/mcp"}},
		{"no protocol", "serve { run = a }", map[bytecode.ProtocolKind]string{
			bytecode.ProtoAGUI: "/agui", bytecode.ProtoA2A: "/a2a", bytecode.ProtoOpenAI: "/v1", bytecode.ProtoMCP: "/mcp"}},
		{"mcp only", `serve { mcp { path = "/tools" } }`, map[bytecode.ProtocolKind]string{bytecode.ProtoMCP: "/tools"}},
		{"mcp default path", `serve {
  mcp {}
  openai { path = "/oai" }
}`, map[bytecode.ProtocolKind]string{bytecode.ProtoMCP: "/mcp", bytecode.ProtoOpenAI: "/oai"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "workflow w \"W\"\n\nmodel m { provider = openai, name = \"x\" }\n\nagent a llm \"A\" { model = m }\n\n" + tc.serve + "\n"
			eps := Endpoints(runtimetest.CompileSource(t, "w.agent", src))
			got := map[bytecode.ProtocolKind]string{}
			for k, e := range eps {
				got[k] = e.Path
			}
			if len(got) != len(tc.want) {
				t.Fatalf("endpoints %v, want %v", got, tc.want)
			}
			for k, p := range tc.want {
				if got[k] != p {
					t.Fatalf("endpoints %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestCheckAuth: open takes no tokens and loopback only; closed needs a
// token.
func TestCheckAuth(t *testing.T) {
	tok := map[string]string{"t": "u"}
	for _, tc := range []struct {
		s    ServeSettings
		want string
	}{
		{ServeSettings{Addr: "127.0.0.1:8080", Tokens: tok}, ""},
		{ServeSettings{Addr: "127.0.0.1:8080", Open: true}, ""},
		{ServeSettings{Addr: "127.0.0.1:8080", Open: true, Tokens: tok}, "takes no tokens"},
		{ServeSettings{Addr: "0.0.0.0:8080", Open: true}, "loopback addresses only, not 0.0.0.0:8080"},
		{ServeSettings{Addr: "0.0.0.0:8080"}, "no bearer tokens"},
	} {
		err := tc.s.CheckAuth()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}
