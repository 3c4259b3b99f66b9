package lsp

import (
	"fmt"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Hover on a record field selector (claim.category): the checker records
// the type of each primary and of each selector chain; the type of one
// selector inside a chain is the primary's type walked field by field.

// selectorAt finds the `.name` selector under off and the record field it
// selects.
func selectorAt(info *compiler.Info, file string, off int) (span diag.Span, owner *types.Type, field types.Field, ok bool) {
	if info == nil {
		return
	}
	for k := range info.ExprTypes.All() {
		p, isPostfix := k.(*syntax.Postfix)
		if !isPostfix || len(p.Sel) == 0 || !contains(p.Span(), file, off) {
			continue
		}
		t := info.TypeOf(p.Primary)
		for _, sel := range p.Sel {
			if sel == nil {
				break
			}
			base := t
			if base != nil && base.Kind() == types.KindOptional {
				base = base.Elem()
			}
			if sel.Field == nil { // [index]
				t = base.Elem()
				if base != nil && base.Kind() == types.KindJSON {
					t = base
				}
				continue
			}
			if base == nil || base.Kind() != types.KindRecord {
				if base != nil && base.Kind() == types.KindJSON {
					t = base
					continue
				}
				break
			}
			i := base.FieldIndex(sel.Field.Name)
			if i < 0 {
				break
			}
			f := base.Field(i)
			if contains(sel.Field.Span(), file, off) {
				return sel.Field.Span(), base, f, true
			}
			t = f.Type
		}
	}
	return
}

func describeSelector(owner *types.Type, f types.Field) string {
	var b strings.Builder
	line := f.Name + ": " + typeString(f.Type)
	if f.HasDefault {
		line += " = " + f.Default.String()
	}
	fmt.Fprintf(&b, "```agent\n%s\n```\n", line)
	if n := owner.Name(); n != "" {
		fmt.Fprintf(&b, "\nfield of type `%s`\n", n)
	} else {
		fmt.Fprintf(&b, "\nfield of `%s`\n", owner.String())
	}
	return strings.TrimSpace(b.String())
}
