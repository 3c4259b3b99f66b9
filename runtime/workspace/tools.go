package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

// ToolNames are the workspace tools: the stdlib table's tools bound here.
var ToolNames = stdlib.ToolNames(stdlib.BindWorkspace)

// MaxReadBytes caps workspace_read and workspace_save_artifact reads.
const MaxReadBytes = 1 << 20

// Tools are the workspace tools over one configuration.
type Tools struct {
	Workspaces *Manager
	Exec       Executor
	Artifacts  *artifact.Service // nil: workspace_save_artifact fails
}

// All returns the workspace tools by name, for a RunnerConfig's tools.
func (t *Tools) All() map[string]runtime.Tool {
	out := map[string]runtime.Tool{}
	for _, name := range ToolNames {
		out[name] = &wsTool{name: name, t: t}
	}
	return out
}

type wsTool struct {
	name string
	t    *Tools
}

// BuiltinSpec returns the spec and effect of a builtin tool of the stdlib
// table (an unknown name: a bare spec and side_effect).
func BuiltinSpec(name string) (runtime.ToolSpec, runtime.Effect) {
	d := stdlib.LookupTool(name)
	if d == nil {
		return runtime.ToolSpec{Name: name}, runtime.SideEffect
	}
	return runtime.ToolSpec{Name: name, Description: d.Doc, InputSchema: d.InputSchema()}, d.Effect
}

// RunEndObserver implements runtime.RunScoped: the Runner removes a run's
// workspace when the run ends for good.
func (w *wsTool) RunEndObserver() runtime.RunEndObserver {
	if w.t.Workspaces == nil {
		return nil
	}
	return w.t.Workspaces
}

func (w *wsTool) Spec() runtime.ToolSpec { s, _ := BuiltinSpec(w.name); return s }
func (w *wsTool) Effect() runtime.Effect { _, e := BuiltinSpec(w.name); return e }

// toolErr is a tool_error: the model sees it and may correct the call.
func toolErr(tool string, err error) error {
	return runtime.Errorf(vm.KindToolError, "%s: %v", tool, err)
}

// ExecOutput is the output record of workspace_exec.
type ExecOutput struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out"`
}

// SavedArtifact is the output record of workspace_save_artifact.
type SavedArtifact struct {
	Name     string `json:"name"`
	Revision int    `json:"revision"`
	Size     int    `json:"size"`
}

// ParseTimeout reads an optional duration argument ("30s").
func ParseTimeout(s *string) (time.Duration, error) {
	if s == nil || *s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("timeout %q is not a duration like \"30s\"", *s)
	}
	return d, nil
}

func (w *wsTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	ws, err := w.t.Workspaces.ForRun(req.Run)
	if err != nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "%s: %v", w.name, err)
	}
	var out any
	switch w.name {
	case "workspace_write":
		var in struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := runtime.DecodeArgs(w.name, req.Args, &in); err != nil {
			return nil, err
		}
		if err := ws.WriteFile(in.Path, []byte(in.Content)); err != nil {
			return nil, toolErr(w.name, err)
		}
		out = fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)
	case "workspace_read":
		var in struct {
			Path  string `json:"path"`
			Limit *int   `json:"limit"`
		}
		if err := runtime.DecodeArgs(w.name, req.Args, &in); err != nil {
			return nil, err
		}
		max := int64(MaxReadBytes)
		if in.Limit != nil && *in.Limit > 0 && int64(*in.Limit) < max {
			max = int64(*in.Limit)
		}
		b, size, err := ws.ReadFile(in.Path, max)
		if err != nil {
			return nil, toolErr(w.name, err)
		}
		s := string(b)
		if size > int64(len(b)) {
			s += fmt.Sprintf("\n[truncated: %d of %d bytes shown]", len(b), size)
		}
		out = s
	case "workspace_list":
		var in struct {
			Path *string `json:"path"`
		}
		if err := runtime.DecodeArgs(w.name, req.Args, &in); err != nil {
			return nil, err
		}
		rel := "."
		if in.Path != nil {
			rel = *in.Path
		}
		ents, err := ws.List(rel)
		if err != nil {
			return nil, toolErr(w.name, err)
		}
		out = ents
	case "workspace_exec":
		var in struct {
			Command []string `json:"command"`
			Cwd     *string  `json:"cwd"`
			Stdin   *string  `json:"stdin"`
			Timeout *string  `json:"timeout"`
		}
		if err := runtime.DecodeArgs(w.name, req.Args, &in); err != nil {
			return nil, err
		}
		if w.t.Exec == nil {
			return nil, runtime.Errorf(vm.KindUnavailable, "%s: no executor configured", w.name)
		}
		cmd := Command{Argv: in.Command}
		if in.Cwd != nil {
			cmd.Dir = *in.Cwd
		}
		if in.Stdin != nil {
			cmd.Stdin = []byte(*in.Stdin)
		}
		if cmd.Timeout, err = ParseTimeout(in.Timeout); err != nil {
			return nil, toolErr(w.name, err)
		}
		res, err := w.t.Exec.Run(ctx, ws, cmd)
		if err != nil {
			if ctx.Err() != nil {
				return nil, runtime.Errorf(vm.KindTimeout, "%s: %v", w.name, err)
			}
			return nil, toolErr(w.name, err)
		}
		out = ExecOutput{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, TimedOut: res.TimedOut}
	case "workspace_save_artifact":
		var in struct {
			Path     string  `json:"path"`
			Name     *string `json:"name"`
			MimeType *string `json:"mime_type"`
		}
		if err := runtime.DecodeArgs(w.name, req.Args, &in); err != nil {
			return nil, err
		}
		m, err := SaveArtifact(ctx, w.t.Artifacts, ws, req, in.Path, deref(in.Name), deref(in.MimeType))
		if err != nil {
			return nil, err
		}
		out = SavedArtifact{Name: m.Name, Revision: m.Revision, Size: m.Size}
	default:
		return nil, runtime.Errorf(vm.KindInternal, "unknown workspace tool %s", w.name)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, runtime.Errorf(vm.KindInternal, "%s: encode result: %v", w.name, err)
	}
	return b, nil
}

// mimeTypes is a fixed table (the system's MIME database differs by
// machine; results must not).
var mimeTypes = map[string]string{
	".md": "text/markdown", ".txt": "text/plain", ".json": "application/json", ".csv": "text/csv",
	".html": "text/html", ".yaml": "application/yaml", ".yml": "application/yaml", ".log": "text/plain",
	".png": "image/png", ".svg": "image/svg+xml", ".pdf": "application/pdf",
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SaveArtifact saves the workspace file rel as the next revision of the
// session artifact name (default: rel), guessing the MIME type from the
// extension when mimeType is empty.
func SaveArtifact(ctx context.Context, svc *artifact.Service, ws *Workspace, req runtime.ToolRequest, rel, name, mimeType string) (artifact.Meta, error) {
	const tool = "workspace_save_artifact"
	if svc == nil {
		return artifact.Meta{}, runtime.Errorf(vm.KindUnavailable, "%s: no artifact service configured", tool)
	}
	b, size, err := ws.ReadFile(rel, artifact.MaxSize+1)
	if err != nil {
		return artifact.Meta{}, toolErr(tool, err)
	}
	if size > int64(len(b)) || len(b) > artifact.MaxSize {
		return artifact.Meta{}, toolErr(tool, fmt.Errorf("%q is %d bytes, over the %d-byte artifact cap", rel, size, artifact.MaxSize))
	}
	if name == "" {
		name = path.Clean(rel)
	}
	if mimeType == "" {
		mimeType = mimeTypes[path.Ext(name)]
		if mimeType == "" {
			mimeType = "application/octet-stream"
		}
	}
	if req.Session.App == "" {
		return artifact.Meta{}, runtime.Errorf(vm.KindUnavailable, "%s: the call has no session", tool)
	}
	m, err := svc.Save(ctx, artifact.Key{App: req.Session.App, User: req.Session.User, Session: req.Session.Session, Name: name}, b, mimeType, req.Run)
	if errors.Is(err, artifact.ErrTooLarge) {
		return artifact.Meta{}, toolErr(tool, err)
	}
	if err != nil {
		return artifact.Meta{}, runtime.Errorf(vm.KindUnavailable, "%s: %v", tool, err)
	}
	return m, nil
}
