package compiler

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// A model's price block is lowered flat into its attributes, as the
// constants price.input, price.output and price.cached (only those
// written; an int literal as a float), survives the file format, and
// shows in the disassembly.
func TestLowerPrice(t *testing.T) {
	prog, ds := compileSource(t, `
model m {
  provider = openai
  name     = "x"
  price { input = 0.15, output = 1 }
}
model free { provider = openai, name = "y" }
agent a llm { model = m }
agent b llm { model = free }
`)
	if prog == nil {
		t.Fatalf("does not compile: %v", ds)
	}
	back := reloaded(t, prog)
	for _, p := range []*bytecode.Program{prog, back} {
		got := map[string]map[string]float64{}
		for i := range p.Models {
			md := &p.Models[i]
			got[md.Name] = map[string]float64{}
			for _, at := range md.Attrs {
				if !strings.HasPrefix(at.Name, "price.") {
					continue
				}
				v, ok := p.ConstAttr(md.Attrs, at.Name)
				if !ok || v.Kind() != types.ValFloat {
					t.Errorf("model %s: %s is not a float constant (%v)", md.Name, at.Name, v)
					continue
				}
				got[md.Name][at.Name] = v.Float()
			}
		}
		if m := got["m"]; len(m) != 2 || m["price.input"] != 0.15 || m["price.output"] != 1 {
			t.Errorf("model m prices %v", m)
		}
		if f := got["free"]; len(f) != 0 {
			t.Errorf("model free prices %v", f)
		}
	}
	dis := bytecode.Disasm(prog)
	for _, want := range []string{"      price.input = 0.15\n", "      price.output = 1.0\n"} {
		if !strings.Contains(dis, want) {
			t.Errorf("disasm lacks %q:\n%s", want, dis)
		}
	}
}

// Editors find the price block's attributes (hover and completion).
func TestPriceBlockAttrs(t *testing.T) {
	var names []string
	for _, d := range BlockAttrs("price") {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "input,output,cached" {
		t.Errorf("BlockAttrs(price) = %v", names)
	}
}
