package format

import (
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is the unified diff (3 lines of context) that turns src, the file
// name, into out, its formatted form (agentc fmt -d); "" when they are
// equal.
func Diff(name string, src, out []byte) (string, error) {
	ud := difflib.UnifiedDiff{A: difflib.SplitLines(string(src)), B: difflib.SplitLines(string(out)),
		FromFile: name + ".orig", ToFile: name, Context: 3}
	text, err := difflib.GetUnifiedDiffString(ud)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", name, err)
	}
	return text, nil
}
