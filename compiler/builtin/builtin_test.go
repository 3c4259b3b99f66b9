package builtin_test

import (
	"slices"
	"testing"

	"github.com/agentc/agentc/compiler/builtin"
)

// TestLookups: a nil universe knows nothing (the compiler's empty
// universe); a filled one finds its entries and lists its tools sorted.
func TestLookups(t *testing.T) {
	var none *builtin.Universe
	if none.Func("len") != nil || none.Tool("read_file") != nil || len(none.ToolNames()) != 0 {
		t.Fatal("a nil universe answers lookups")
	}
	u := &builtin.Universe{
		Funcs: map[string]*builtin.Func{"len": {Name: "len"}},
		Tools: map[string]*builtin.Tool{"b": {Name: "b"}, "a": {Name: "a"}, "c": {Name: "c"}},
	}
	if f := u.Func("len"); f == nil || f.Name != "len" {
		t.Errorf("Func(len) = %v", f)
	}
	if u.Func("nope") != nil || u.Tool("nope") != nil {
		t.Error("unknown names are found")
	}
	if got := u.ToolNames(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("ToolNames = %v", got)
	}
}
