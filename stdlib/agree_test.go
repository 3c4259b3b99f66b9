package stdlib_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

func funcPtr(f vm.Func) uintptr { return reflect.ValueOf(f).Pointer() }

// TestFunctionsAgree: the compiler's functions, the VM's and the table's
// are the same set; every function without a VM implementation names its
// host.
func TestFunctionsAgree(t *testing.T) {
	u := stdlib.Universe()
	impls := stdlib.Funcs()
	byName := map[string]*stdlib.Func{}
	for _, f := range stdlib.Functions() {
		byName[f.Name] = f
		if u.Func(f.Name) != &f.Func {
			t.Errorf("%s: the universe's signature is not the table's", f.Name)
		}
		switch {
		case f.Impl != nil && f.Host != "":
			t.Errorf("%s has both an implementation and a host (%s)", f.Name, f.Host)
		case f.Impl == nil && !slices.Contains([]string{"loader", "test", "history"}, f.Host):
			t.Errorf("%s has no implementation and no known host (%q)", f.Name, f.Host)
		case f.Impl != nil && impls[f.Name] == nil:
			t.Errorf("%s is implemented but not in Funcs()", f.Name)
		}
		if f.Doc == "" || f.Where == 0 {
			t.Errorf("%s: no doc or no place to be called", f.Name)
		}
	}
	if len(u.Funcs) != len(byName) {
		t.Errorf("universe has %d functions, table %d", len(u.Funcs), len(byName))
	}
	for name := range impls {
		if byName[name] == nil || byName[name].Impl == nil {
			t.Errorf("VM function %s has no compiler signature", name)
		}
	}
	for name, f := range vm.Builtins() {
		e := byName[name]
		if e == nil || e.Impl == nil || funcPtr(e.Impl) != funcPtr(f) {
			t.Errorf("vm.Builtins %s is not the table's implementation", name)
		}
	}
	if !slices.IsSortedFunc(stdlib.Functions(), func(a, b *stdlib.Func) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Functions() is not sorted by name")
	}
}

func schemaJSON(t *testing.T, s map[string]any) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestToolsAgree: every builtin tool of the table has a runtime binding in
// the package it names, with the table's name, description, input schema
// and effect; every tool those packages provide is in the table; the
// universe holds the service tools and names the impl tools.
func TestToolsAgree(t *testing.T) {
	bound := map[string]map[string]runtime.Tool{
		stdlib.BindRecall:    {recall.SearchToolName: recall.NewSearchTool(nil, nil), recall.LoadToolName: recall.NewLoadTool(nil, nil)},
		stdlib.BindMemory:    {memory.SearchToolName: memory.NewSearchTool(nil), memory.AddToolName: memory.NewAddTool(nil, nil)},
		stdlib.BindSkill:     (&skill.Tools{}).All(),
		stdlib.BindWorkspace: (&workspace.Tools{}).All(),
		stdlib.BindTools:     tools.Builtins(tools.Config{}),
	}
	u := stdlib.Universe()
	seen := map[string]bool{}
	for _, d := range stdlib.Tools() {
		seen[d.Name] = true
		tl := bound[d.Binding][d.Name]
		if tl == nil {
			t.Errorf("%s: %s does not bind it", d.Name, d.Binding)
			continue
		}
		sp := tl.Spec()
		if sp.Name != d.Name || sp.Description != d.Doc || d.Doc == "" {
			t.Errorf("%s: spec name %q, description %q; table doc %q", d.Name, sp.Name, sp.Description, d.Doc)
		}
		if got, want := schemaJSON(t, sp.InputSchema), schemaJSON(t, d.InputSchema()); got != want {
			t.Errorf("%s: input schema %s, table %s", d.Name, got, want)
		}
		if tl.Effect() != d.Effect || d.Effect == 0 {
			t.Errorf("%s: effect %s, table %s", d.Name, tl.Effect(), d.Effect)
		}
		switch d.Kind {
		case stdlib.Service:
			if u.Tool(d.Name) != &d.Tool || u.Impls[d.Name] {
				t.Errorf("service tool %s: not the universe's tool, or named in Impls", d.Name)
			}
		case stdlib.Impl:
			if u.Tool(d.Name) != nil || !u.Impls[d.Name] || d.Binding != stdlib.BindTools {
				t.Errorf("impl tool %s: a universe tool, missing from Impls, or bound by %s", d.Name, d.Binding)
			}
		default:
			t.Errorf("%s: kind %d", d.Name, d.Kind)
		}
		if stdlib.LookupTool(d.Name) != d {
			t.Errorf("LookupTool(%s) is not the entry", d.Name)
		}
	}
	for bind, m := range bound {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if d := stdlib.LookupTool(name); d == nil || d.Binding != bind {
				t.Errorf("%s provides %s, which the table does not give to it", bind, name)
			}
		}
		if got := stdlib.ToolNames(bind); !slices.Equal(got, slices.Sorted(maps.Keys(m))) {
			t.Errorf("ToolNames(%s) = %v, bound %v", bind, got, slices.Sorted(maps.Keys(m)))
		}
	}
	if len(u.Tools)+len(u.Impls) != len(seen) {
		t.Errorf("universe has %d tools and %d impls, table %d entries", len(u.Tools), len(u.Impls), len(seen))
	}
	if len(u.ErrorKinds) == 0 || !slices.IsSorted(u.ErrorKinds) {
		t.Errorf("error kinds %v", u.ErrorKinds)
	}
}
