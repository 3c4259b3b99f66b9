package assemble

import (
	"fmt"
	"os"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/workspace/jail"
)

// UnconfinedExecEnv is the operator's opt-in to serving tools that run
// commands to several users on a machine that cannot confine them.
const UnconfinedExecEnv = "AGENTC_UNCONFINED_EXEC"

// ExecTools lists the program's tools that run commands: declared exec
// tools, workspace_exec and skill_run.
func ExecTools(p *bytecode.Program) []string {
	var out []string
	for _, t := range p.Tools {
		if t.Impl.Kind == bytecode.ImplExec || (t.Impl.Kind == bytecode.ImplBuiltin && (t.Impl.Builtin == "workspace_exec" || t.Impl.Builtin == "skill_run")) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// ExecConfinement says at start how the program's commands are confined
// (on note; nothing when it runs none) and refuses to serve
// command-running tools to more than one user (several token users, or
// open, where any X-Agentc-User is a user) when the kernel cannot confine
// them, unless AGENTC_UNCONFINED_EXEC=1 in env (nil: os.LookupEnv)
// (spec/serve.md, "Executed code"); r is workspace.Confinement(), tokens
// map a token to its user.
func ExecConfinement(p *bytecode.Program, r jail.Report, tokens map[string]string, open bool, env func(string) (string, bool), note func(string)) error {
	if env == nil {
		env = os.LookupEnv
	}
	names := ExecTools(p)
	if len(names) == 0 {
		return nil
	}
	users := map[string]bool{}
	for _, u := range tokens {
		users[u] = true
	}
	switch v, _ := env(UnconfinedExecEnv); {
	case r.Confined():
		note(fmt.Sprintf("tools that run commands (%v) are confined: %s", names, r))
	case !open && len(users) <= 1:
		note(fmt.Sprintf("warning: tools that run commands (%v) are NOT confined (%s); one user only", names, r))
	case v == "1":
		note(fmt.Sprintf("warning: tools that run commands (%v) are NOT confined (%s) and are served to several users because %s=1: each user's commands can read the others' workspaces, the data directory and this server's environment", names, r, UnconfinedExecEnv))
	default:
		return fmt.Errorf("tools that run commands (%v) cannot be confined on this machine (%s): served to several users, each could read the others' workspaces, the data directory and this server's secrets; serve one user, run on a kernel with Landlock (and user namespaces), or set %s=1 to accept the risk", names, r, UnconfinedExecEnv)
	}
	return nil
}
