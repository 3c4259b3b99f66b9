package compiler

// Exec commands are argv: no shell parses an input value unless the
// command itself starts one. An interpolation inside the script of
// `sh -c SCRIPT` (or bash, python -c, perl -e, ...) hands input to a
// parser of code: shell injection. The script must be constant and take
// its inputs as arguments ("$1").

import (
	"path"
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// scriptFlags maps an interpreter to the option after which an argument is
// code.
var scriptFlags = map[string]byte{
	"sh": 'c', "bash": 'c', "zsh": 'c', "dash": 'c', "ksh": 'c', "mksh": 'c', "ash": 'c',
	"fish": 'c', "csh": 'c', "tcsh": 'c', "busybox": 'c',
	"python": 'c', "python3": 'c', "python2": 'c',
	"perl": 'e', "ruby": 'e', "node": 'e',
}

// checkShellCommand reports an interpolation (or any non-literal value) in
// the code argument of a shell or interpreter an exec command runs.
func (c *checker) checkShellCommand(attrs *Attrs) {
	a := attrs.Get("command")
	if a == nil || a.Value == nil {
		return
	}
	list, ok := primaryOf(a.Value).(*syntax.ListLit)
	if !ok {
		return
	}
	shell := ""
	var flag byte
	for i, el := range list.Elems {
		lit, isLit := literalString(el.X)
		if shell == "" {
			if f, ok := scriptFlags[path.Base(lit)]; isLit && ok {
				shell, flag = path.Base(lit), f
			}
			continue
		}
		if !isLit || !scriptOption(lit, flag) {
			continue
		}
		// The code is the next argument.
		if i+1 < len(list.Elems) {
			code := list.Elems[i+1].X
			if _, ok := literalString(code); !ok {
				c.errorf(ShellInterpolation, code.Span(), "input is interpolated into the script of %s -%c: that is shell injection", shell, flag).Detail =
					"keep the script constant and pass values as arguments after it: [\"sh\", \"-c\", \"echo \\\"$1\\\"\", \"sh\", \"{input.x}\"]"
			}
		}
		return
	}
}

// scriptOption reports whether arg is the option flag, alone or in a
// cluster of short options ("-c", "-ec", "-lc").
func scriptOption(arg string, flag byte) bool {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false
	}
	return strings.IndexByte(arg[1:], flag) >= 0 && strings.Trim(arg[1:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}
