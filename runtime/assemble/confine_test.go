package assemble

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/workspace/jail"
)

func TestExecConfinement(t *testing.T) {
	execProg := &bytecode.Program{Tools: []bytecode.Tool{
		{Name: "deploy", Impl: bytecode.ToolImpl{Kind: bytecode.ImplExec}},
		{Name: "sh", Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "workspace_exec"}},
	}}
	plain := &bytecode.Program{Tools: []bytecode.Tool{{Name: "read", Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "read_file"}}}}
	confined := jail.Report{Landlock: 7, Namespaces: true}
	bare := jail.Report{Missing: []string{"Landlock: not enabled"}}
	two := map[string]string{"t1": "alice", "t2": "bob"}
	one := map[string]string{"t1": "alice", "t2": "alice"}
	for _, tc := range []struct {
		name    string
		prog    *bytecode.Program
		r       jail.Report
		tokens  map[string]string
		open    bool
		optIn   bool
		wantErr string
		wantOut string
	}{
		{"confined, two users", execProg, confined, two, false, false, "", "are confined: landlock ABI 7"},
		{"unconfined, two users", execProg, bare, two, false, false, "cannot be confined on this machine", ""},
		{"unconfined, open mode", execProg, bare, nil, true, false, "AGENTC_UNCONFINED_EXEC=1", ""},
		{"unconfined, one user", execProg, bare, one, false, false, "", "NOT confined"},
		{"unconfined, two users, opted in", execProg, bare, two, false, true, "", "because AGENTC_UNCONFINED_EXEC=1"},
		{"no tools that run commands", plain, bare, two, false, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) (string, bool) {
				if tc.optIn && k == UnconfinedExecEnv {
					return "1", true
				}
				return "", false
			}
			out := ""
			err := ExecConfinement(tc.prog, tc.r, tc.tokens, tc.open, env, func(msg string) { out = msg })
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if !strings.Contains(out, tc.wantOut) || tc.wantOut == "" && out != "" && tc.prog == plain {
				t.Errorf("stderr = %q, want %q", out, tc.wantOut)
			}
		})
	}
}
