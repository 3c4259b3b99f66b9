package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/agentc/agentc/compiler/mcplock"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
)

// MCPPin is what a lock file pins for one `run = mcp` tool
// (spec/tools.md "Pinned schemas").
type MCPPin struct {
	// Server is the server's key as the declaration names it
	// (mcplock.URLKey / CommandKey of the url or command as written).
	Server string
	// Lock is the lock file (relative to the module root) and Hash the
	// SHA-256 of its bytes, "" when the file is missing or does not
	// decode.
	Lock string
	Hash string
	// Tool is the server's pinned tool, nil when the lock does not have
	// the server or the tool.
	Tool *mcplock.Tool
}

// mcpLock is one lock file as read (cached per declaring file).
type mcpLock struct {
	name    string
	file    *mcplock.File
	hash    string
	missing bool
	err     error
}

// lockFor reads the lock file next to the .agent file (once).
func (c *checker) lockFor(file string) *mcpLock {
	if l, ok := c.mcpLocks[file]; ok {
		return l
	}
	l := &mcpLock{name: mcplock.Name(file)}
	c.mcpLocks[file] = l
	src, err := readLimited(c.cfg.FS, c.cfg.fsPath(l.name), mcplock.MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.missing = true
	case err != nil:
		l.err = err
	default:
		sum := sha256.Sum256(src)
		l.hash = "sha256:" + hex.EncodeToString(sum[:])
		l.file, l.err = mcplock.Parse(src)
	}
	return l
}

// mcpServerKey is the lock key of an mcp tool's server: its url or
// command as written (a constant as its value, else its source text).
func mcpServerKey(attrs *Attrs) string {
	if a := attrs.Get("url"); a != nil {
		if a.HasConst && a.Const.Kind() == types.ValString {
			return mcplock.URLKey(a.Const.Str())
		}
		if a.Value != nil {
			return mcplock.URLKey(ExprText(a.Value))
		}
	}
	if a := attrs.Get("command"); a != nil {
		var argv []string
		if a.HasConst && a.Const.Kind() == types.ValList {
			for i := range a.Const.Len() {
				if e := a.Const.Elem(i); e.Kind() == types.ValString {
					argv = append(argv, e.Str())
				}
			}
		} else if a.Value != nil {
			argv = []string{ExprText(a.Value)}
		}
		return mcplock.CommandKey(argv)
	}
	return ""
}

// pinMCP looks the tool up in its file's lock, sets its effect from the
// pinned annotations when the declaration gives none, and checks the
// declared input and output against the pinned schemas. inputAt and
// outputAt are the spans of the declaration's input and output (the tool's
// when absent).
func (c *checker) pinMCP(t *Tool, runAt, inputAt, outputAt diag.Span) {
	attrs := t.Impl.Attrs
	if attrs == nil || c.cfg.IgnoreMCPLocks {
		return
	}
	key := mcpServerKey(attrs)
	name := ""
	nameAt := runAt
	if a := attrs.Get("tool"); a != nil && a.HasConst && a.Const.Kind() == types.ValString {
		name, nameAt = a.Const.Str(), a.Span
	}
	if key == "" || name == "" {
		return // reported by checkBlock and checkMCPTransport
	}
	l := c.lockFor(t.file)
	pin := &MCPPin{Server: key, Lock: l.name, Hash: l.hash}
	t.MCP = pin
	server := key[len("url "):]
	if attrs.Get("url") == nil {
		server = key[len("command "):]
	}
	lockCmd := "run `agentc mcp lock " + t.file + "`"
	switch {
	case l.err != nil:
		c.errorf(MCPLockInvalid, runAt, "%s does not decode: %v", l.name, l.err).Detail = lockCmd + " to rewrite it"
		return
	case l.missing:
		c.warnf(MCPNotPinned, runAt, "tool %s: the schemas of mcp server %s are not pinned (no %s)", t.name, server, l.name).Detail = lockCmd + " to pin them; validate then checks calls against them without the network"
		return
	}
	srv := l.file.Server(key)
	if srv == nil {
		c.warnf(MCPNotPinned, runAt, "tool %s: %s does not pin mcp server %s", t.name, l.name, server).Detail = lockCmd + " to pin it"
		return
	}
	pin.Tool = srv.Tool(name)
	if pin.Tool == nil {
		names := make([]string, 0, len(srv.Tools))
		for _, st := range srv.Tools {
			names = append(names, st.Name)
		}
		sort.Strings(names)
		c.errorf(MCPToolGone, nameAt, "tool %s: mcp server %s has no tool %q (pinned in %s)", t.name, server, name, l.name).Detail = suggestOr(name, names) + "; if the server changed on purpose, " + lockCmd
		return
	}
	c.mcpEffect(t, pin.Tool)
	for _, p := range mcplock.CheckInput(t.Input, pin.Tool.Input()) {
		c.mcpProblem(t, p, inputAt, "the declared input")
	}
	for _, p := range mcplock.CheckOutput(t.Output, pin.Tool.Output()) {
		c.errorf(MCPOutputDrift, outputAt, "tool %s: %s (pinned output schema of %q in %s)", t.name, p.Msg, name, l.name)
	}
}

// mcpProblem reports one disagreement of arguments with the pinned input
// schema at span.
func (c *checker) mcpProblem(t *Tool, p mcplock.Problem, at diag.Span, where string) {
	code := MCPArgType
	if p.Kind == mcplock.Required {
		code = MCPArgRequired
	}
	c.errorf(code, at, "tool %s: argument %s: %s (pinned in %s)", t.name, p.Arg, p.Msg, t.MCP.Lock).Detail = where + " no longer matches the server's schema; change it, or the server, then run `agentc mcp lock " + t.file + "`"
}

var mcpEffects = map[mcplock.Effect]Effect{mcplock.ReadOnly: ReadOnly, mcplock.Idempotent: Idempotent, mcplock.SideEffect: SideEffect}

// mcpEffect defaults the tool's effect from the pinned annotations and
// refuses a declared effect weaker than a destructive hint unless the
// block says why (effect_override).
func (c *checker) mcpEffect(t *Tool, pt *mcplock.Tool) {
	hinted, destructive := pt.Effect()
	declared := t.Attrs.Get("effect")
	if declared == nil {
		if e, ok := mcpEffects[hinted]; ok {
			t.Effect = e
		}
		return
	}
	if destructive && t.Effect < SideEffect && t.Impl.Attrs.Get("effect_override") == nil {
		c.errorf(MCPWeakEffect, declared.Span, "tool %s declares effect %s, but the server marks %s destructive (destructiveHint)", t.name, t.Effect, pt.Name).Detail = "a crash could re-run a destructive call: remove the effect (it defaults to side_effect), or keep it and say why with effect_override = \"...\" in the mcp block"
	}
}

// checkMCPArgs checks a tool node's arguments against its tool's pinned
// input schema: each argument given must fit its property, and each
// argument the server requires must be given (or have a default).
func (c *checker) checkMCPArgs(t *Tool, args *Attrs, at diag.Span) {
	if t == nil || t.MCP == nil || c.cfg.IgnoreMCPLocks {
		return
	}
	l := c.lockFor(t.file)
	if l.file == nil || l.file.Server(t.MCP.Server) == nil {
		return // the declaration's diagnostic says it
	}
	if t.MCP.Tool == nil {
		c.errorf(MCPToolGone, at, "tool %s: its mcp server no longer has the tool it calls (pinned in %s)", t.name, t.MCP.Lock)
		return
	}
	schema := t.MCP.Tool.Input()
	set := map[string]bool{}
	for _, a := range args.List {
		set[a.Name] = true
		typ := a.Type
		if typ != nil && typ.Kind() == types.KindJSON && a.Value != nil {
			// A json argument is sent as the value it is given: check
			// that value's type.
			if et := c.info.ExprTypes.Of(a.Value); et != nil {
				typ = et
			}
		}
		if p := mcplock.CheckArg(a.Name, typ, schema); p != nil {
			span := a.Span
			if a.Syn != nil && a.Syn.Key != nil {
				span = a.Syn.Key.Span()
			}
			c.mcpProblem(t, *p, span, "this call")
		}
	}
	for _, r := range mcplock.RequiredArgs(schema) {
		if set[r] {
			continue
		}
		if i := t.Input.FieldIndex(r); i >= 0 && t.Input.Field(i).HasDefault {
			continue
		}
		c.mcpProblem(t, mcplock.Problem{Kind: mcplock.Required, Arg: r, Msg: "the server requires it and this call does not give it"}, at, "this call")
	}
}

// readLimited reads a file of fsys, at most max bytes: a larger file is an
// error without reading it all.
func readLimited(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}
