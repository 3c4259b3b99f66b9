package vm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// Builtins returns the default function table: the expression functions the
// language guarantees (spec/language.md §4.6) that run inside graphs — len,
// contains, lower, upper, join, keys, json, any and all. The map is fresh on
// every call, so the embedder (cmd/agentc, from the stdlib table) may add or
// replace entries before passing it to New.
func Builtins() map[string]Func {
	return map[string]Func{
		"len":      builtinLen,
		"contains": builtinContains,
		"lower":    builtinLower,
		"upper":    builtinUpper,
		"join":     builtinJoin,
		"keys":     builtinKeys,
		"json":     builtinJSON,
		"any":      builtinAny,
		"all":      builtinAll,
	}
}

func argc(args []types.Value, min, max int) error {
	if len(args) < min || len(args) > max {
		if min == max {
			return fmt.Errorf("takes %d arguments, got %d", min, len(args))
		}
		return fmt.Errorf("takes %d to %d arguments, got %d", min, max, len(args))
	}
	return nil
}

func wantString(v types.Value, what string) (string, error) {
	if v.Kind() != types.ValString {
		return "", fmt.Errorf("%s is %s, want string", what, v.Kind())
	}
	return v.Str(), nil
}

// len(x): elements of a list or map, fields of a record, characters of a
// string.
func builtinLen(args []types.Value) (types.Value, error) {
	if err := argc(args, 1, 1); err != nil {
		return types.Value{}, err
	}
	n := args[0].Len()
	if n < 0 {
		return types.Value{}, fmt.Errorf("len of %s", args[0].Kind())
	}
	return types.MakeInt(int64(n)), nil
}

// contains(c, x): a list element, a map key or a substring.
func builtinContains(args []types.Value) (types.Value, error) {
	if err := argc(args, 2, 2); err != nil {
		return types.Value{}, err
	}
	found, ok := types.Contains(args[0], args[1])
	if !ok {
		return types.Value{}, fmt.Errorf("cannot look for %s in %s", args[1].Kind(), args[0].Kind())
	}
	return types.MakeBool(found), nil
}

func builtinLower(args []types.Value) (types.Value, error) { return mapString(args, strings.ToLower) }
func builtinUpper(args []types.Value) (types.Value, error) { return mapString(args, strings.ToUpper) }

func mapString(args []types.Value, f func(string) string) (types.Value, error) {
	if err := argc(args, 1, 1); err != nil {
		return types.Value{}, err
	}
	s, err := wantString(args[0], "argument")
	if err != nil {
		return types.Value{}, err
	}
	return types.MakeString(f(s)), nil
}

// join(list, sep): the elements (strings raw, others as canonical JSON)
// separated by sep, ", " by default.
func builtinJoin(args []types.Value) (types.Value, error) {
	if err := argc(args, 1, 2); err != nil {
		return types.Value{}, err
	}
	if args[0].Kind() != types.ValList && !args[0].IsNull() {
		return types.Value{}, fmt.Errorf("first argument is %s, want list", args[0].Kind())
	}
	sep := ", "
	if len(args) == 2 {
		var err error
		if sep, err = wantString(args[1], "separator"); err != nil {
			return types.Value{}, err
		}
	}
	var buf []byte
	for i := 0; i < args[0].Len(); i++ {
		if i > 0 {
			buf = append(buf, sep...)
		}
		var err error
		if buf, err = types.AppendText(buf, args[0].Elem(i)); err != nil {
			return types.Value{}, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return types.MakeString(string(buf)), nil
}

// keys(m): the sorted keys of a map, or a record's field names in schema
// order.
func builtinKeys(args []types.Value) (types.Value, error) {
	if err := argc(args, 1, 1); err != nil {
		return types.Value{}, err
	}
	m := args[0]
	switch m.Kind() {
	case types.ValMap:
		out := make([]types.Value, m.Len())
		for i := range out {
			k, _ := m.MapEntry(i)
			out[i] = types.MakeString(k)
		}
		return types.MakeList(out), nil
	case types.ValRecord:
		s := m.Shape()
		names := make([]string, s.Len())
		for i := range names {
			names[i] = s.Name(i)
		}
		slices.Sort(names) // sorted, as a map's keys are (spec §4.6)
		out := make([]types.Value, len(names))
		for i, n := range names {
			out[i] = types.MakeString(n)
		}
		return types.MakeList(out), nil
	}
	return types.Value{}, fmt.Errorf("keys of %s, want map or record", m.Kind())
}

// json(x, path): the value at a JSON path ("$", "$.a.b", "$.items[0].name",
// `$["key with space"]`), null when a step is absent.
func builtinJSON(args []types.Value) (types.Value, error) {
	if err := argc(args, 2, 2); err != nil {
		return types.Value{}, err
	}
	path, err := wantString(args[1], "path")
	if err != nil {
		return types.Value{}, err
	}
	return jsonPath(args[0], path)
}

var errPathSyntax = errors.New("malformed JSON path")

func jsonPath(v types.Value, path string) (types.Value, error) {
	bad := func(at int) (types.Value, error) {
		return types.Value{}, fmt.Errorf("%w %q at byte %d", errPathSyntax, path, at)
	}
	if !strings.HasPrefix(path, "$") {
		return bad(0)
	}
	i := 1
	for i < len(path) {
		switch path[i] {
		case '.':
			j := i + 1
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			if j == i+1 {
				return bad(i)
			}
			v = member(v, path[i+1:j])
			i = j
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return bad(i)
			}
			inner := path[i+1 : i+end]
			switch {
			case len(inner) >= 2 && (inner[0] == '"' || inner[0] == '\''):
				if inner[len(inner)-1] != inner[0] {
					return bad(i)
				}
				v = member(v, inner[1:len(inner)-1])
			default:
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 {
					return bad(i)
				}
				if v.Kind() == types.ValList {
					v = v.Elem(n) // null when out of range
				} else {
					v = types.Value{}
				}
			}
			i += end + 1
		default:
			return bad(i)
		}
	}
	return v, nil
}

// member selects a map entry or record field, null when absent.
func member(v types.Value, name string) types.Value {
	x, _ := v.Field(name)
	return x
}

func builtinAny(args []types.Value) (types.Value, error) { return boolFold(args, true) }
func builtinAll(args []types.Value) (types.Value, error) { return boolFold(args, false) }

// boolFold returns stop if any argument equals stop, else !stop.
func boolFold(args []types.Value, stop bool) (types.Value, error) {
	if len(args) == 0 {
		return types.Value{}, errors.New("takes at least 1 argument")
	}
	if i := slices.IndexFunc(args, func(v types.Value) bool { return v.Kind() != types.ValBool }); i >= 0 {
		return types.Value{}, fmt.Errorf("argument %d is %s, want bool", i+1, args[i].Kind())
	}
	for _, a := range args {
		if a.Bool() == stop {
			return types.MakeBool(stop), nil
		}
	}
	return types.MakeBool(!stop), nil
}
