package syntax

import (
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// TestAdvance: the fast path agrees with participle's Position.Advance.
func TestAdvance(t *testing.T) {
	for _, v := range []string{"", "x", "node", "->", "héllo", "a\nb", "\n", "line\nnext ü", "\"\"\"", "日本"} {
		want := lexer.Position{Filename: "f.agent", Offset: 7, Line: 3, Column: 5}
		got := want
		want.Advance(v)
		advance(&got, v)
		if got != want {
			t.Errorf("advance(%q) = %+v, want %+v", v, got, want)
		}
	}
}
