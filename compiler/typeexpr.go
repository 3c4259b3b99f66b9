package compiler

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Type expressions (`list<Triage>`, `"a" | "b"`, `{ host: string }`) and
// constant values (defaults). Named types are resolved on demand, in
// dependency order; a type that refers to itself is an error because types
// are immutable values built bottom-up.

// resolveTypeDecl resolves a type declaration once.
func (c *checker) resolveTypeDecl(t *TypeDecl) *types.Type {
	if c.typeDone[t] || t.bad {
		return t.Type
	}
	syn, ok := t.syn.(*syntax.TypeDecl)
	if !ok {
		return nil
	}
	c.typeBusy[t] = true
	file := c.fileOf[t.syn]
	switch {
	case syn.Record != nil:
		t.Type = c.recordType(t.name, syn.Record, file)
	case syn.Alias != nil:
		a := syn.Alias
		switch {
		case len(a.Enum) > 0:
			t.Type = c.enumType(t.name, a.Enum)
		case a.Single != nil && a.Single.Record != nil && !a.Single.Optional:
			t.Type = c.recordType(t.name, a.Single.Record, file)
		default:
			t.Type = c.typeOf(a, file)
		}
	}
	delete(c.typeBusy, t)
	c.typeDone[t] = true
	return t.Type
}

// typeOf resolves a type expression written in file; nil if it has errors
// (already reported).
func (c *checker) typeOf(st *syntax.Type, file string) *types.Type {
	if st == nil {
		return nil
	}
	if len(st.Enum) > 0 {
		return c.enumType("", st.Enum)
	}
	s := st.Single
	if s == nil {
		return nil
	}
	var t *types.Type
	switch {
	case s.List != nil:
		if e := c.typeOf(s.List, file); e != nil {
			t = types.ListOf(e)
		}
	case s.Map != nil:
		if e := c.typeOf(s.Map, file); e != nil {
			t = types.MapOf(e)
		}
	case s.Record != nil:
		t = c.recordType("", s.Record, file)
	case s.Paren != nil:
		t = c.typeOf(s.Paren, file)
	case s.Named != nil:
		t = c.namedType(s.Named, file)
	}
	if t != nil && s.Optional {
		t = types.OptionalOf(t)
	}
	return t
}

// namedType resolves a type name: a builtin or a declared type.
func (c *checker) namedType(id *syntax.Ident, file string) *types.Type {
	switch id.Name {
	case "string":
		return types.StringType
	case "int":
		return types.IntType
	case "float":
		return types.FloatType
	case "bool":
		return types.BoolType
	case "duration":
		return types.DurationType
	case "json":
		return types.JSONType
	case "messages":
		return types.MessagesType
	case "secret":
		return types.SecretType
	case "error":
		return types.ErrorType
	case "list", "map":
		c.errorf(InvalidOperation, id.Span(), "%s needs an element type: %s<T>", id.Name, id.Name)
		return nil
	}
	d := c.lookup(id, file, "type", DeclType)
	td, ok := d.(*TypeDecl)
	if !ok {
		return nil
	}
	if c.typeBusy[td] {
		c.errorf(RecursiveType, id.Span(), "type %s refers to itself", td.name)
		return nil
	}
	return c.resolveTypeDecl(td)
}

// enumType builds an enum from string literals.
func (c *checker) enumType(name string, lits []*syntax.String) *types.Type {
	var vals []string
	seen := map[string]diag.Span{}
	ok := true
	for _, l := range lits {
		v, lit := l.Literal()
		if !lit {
			c.errorf(NotConstant, l.Span(), "enum literals cannot interpolate")
			ok = false
			continue
		}
		if prev, dup := seen[v]; dup {
			related(c.errorf(diag.DuplicateName, l.Span(), "enum literal %q is repeated", v), "first here", prev)
			ok = false
			continue
		}
		seen[v] = l.Span()
		vals = append(vals, v)
	}
	if !ok || len(vals) == 0 {
		return nil
	}
	t, err := types.NewEnum(name, vals)
	if err != nil {
		return nil
	}
	return t
}

// recordType builds a record type from its fields.
func (c *checker) recordType(name string, rt *syntax.RecordType, file string) *types.Type {
	fields, ok := c.fieldList(rt.Fields, file, "record field")
	if !ok {
		return nil
	}
	t, err := types.NewRecord(name, fields)
	if err != nil {
		c.errorf(TypeMismatch, rt.Span(), "invalid record: %v", err)
		return nil
	}
	return t
}

// fieldList resolves record fields (types and constant defaults); reducers
// are not allowed here.
func (c *checker) fieldList(fs []*syntax.Field, file, what string) ([]types.Field, bool) {
	var out []types.Field
	seen := map[string]diag.Span{}
	ok := true
	for _, f := range fs {
		if f.Name == nil {
			continue
		}
		if prev, dup := seen[f.Name.Name]; dup {
			related(c.errorf(diag.DuplicateName, f.Name.Span(), "%s %s is repeated", what, f.Name.Name), "first here", prev)
			ok = false
			continue
		}
		seen[f.Name.Name] = f.Name.Span()
		if f.Reduce != nil {
			c.errorf(InvalidReducer, f.Reduce.Span(), "reducers belong to state fields, not to %ss", what)
		}
		if f.Max != nil {
			c.errorf(InvalidListSize, f.Max.Span(), "list sizes belong to state fields, not to %ss", what).Detail =
				"declare the size on the state field the list is stored in: name: list<T> max N"
		}
		ft := c.typeOf(f.Type, file)
		if ft == nil {
			ok = false
			continue
		}
		tf := types.Field{Name: f.Name.Name, Type: ft}
		if f.Default != nil {
			if v, good := c.defaultValue(f.Default, ft, file); good {
				tf.HasDefault, tf.Default = true, v
			}
		}
		out = append(out, tf)
	}
	return out, ok
}

// defaultValue type-checks a default expression and evaluates it.
func (c *checker) defaultValue(e *syntax.Expr, want *types.Type, file string) (types.Value, bool) {
	sc := &scope{where: InConst, file: file}
	before := c.diags.Len()
	t := c.expect(e, sc, want, "default")
	if t == nil {
		return types.Value{}, false
	}
	v, ok := c.constValue(e, want)
	if !ok {
		// A literal the type check already reported on (a repeated key,
		// say) is not also "not a literal".
		if c.diags.Len() == before {
			c.errorf(NotConstant, e.Span(), "a default must be a literal value")
		}
		return types.Value{}, false
	}
	cv, err := types.Convert(v, want)
	if err != nil {
		c.errorf(TypeMismatch, e.Span(), "default does not fit %s: %v", want, err)
		return types.Value{}, false
	}
	return cv, true
}

// constValue evaluates a literal expression: numbers, durations, bools, null,
// strings without interpolation, negation, lists and records of those. want
// (may be nil) tells record literals from map literals.
func (c *checker) constValue(e *syntax.Expr, want *types.Type) (types.Value, bool) {
	u := peel(e)
	if u == nil {
		return types.Value{}, false
	}
	return c.constUnary(u, want)
}

func (c *checker) constUnary(u *syntax.Unary, want *types.Type) (types.Value, bool) {
	if u.Neg != nil {
		v, ok := c.constUnary(u.Neg, want)
		if !ok {
			return v, false
		}
		switch v.Kind() {
		case types.ValInt:
			return types.MakeInt(-v.Int()), true
		case types.ValFloat:
			return types.MakeFloat(-v.Float()), true
		case types.ValDuration:
			return types.MakeDuration(-v.Duration()), true
		}
		return v, false
	}
	if u.Postfix == nil || len(u.Postfix.Sel) > 0 {
		return types.Value{}, false
	}
	want = unopt(want)
	switch p := u.Postfix.Primary.(type) {
	case *syntax.Literal:
		return literalValue(p)
	case *syntax.String:
		s, ok := p.Literal()
		if !ok {
			return types.Value{}, false
		}
		return types.MakeString(s), true
	case *syntax.Paren:
		return c.constValue(p.X, want)
	case *syntax.ListLit:
		var elem *types.Type
		if want != nil && (want.Kind() == types.KindList || want.Kind() == types.KindMessages) {
			elem = want.Elem()
		}
		vals := make([]types.Value, 0, len(p.Elems))
		for _, el := range p.Elems {
			if el.Tag != nil {
				return types.Value{}, false
			}
			v, ok := c.constValue(el.X, elem)
			if !ok {
				return v, false
			}
			vals = append(vals, v)
		}
		return types.MakeList(vals), true
	case *syntax.RecordLit:
		keys := make([]string, 0, len(p.Entries))
		vals := make([]types.Value, 0, len(p.Entries))
		for _, en := range p.Entries {
			k, ok := entryKey(en)
			if !ok {
				return types.Value{}, false
			}
			var ft *types.Type
			switch want.Kind() {
			case types.KindRecord:
				if i := want.FieldIndex(k); i >= 0 {
					ft = want.Field(i).Type
				}
			case types.KindMap:
				ft = want.Elem()
			}
			v, ok := c.constValue(en.Value, ft)
			if !ok {
				return v, false
			}
			keys = append(keys, k)
			vals = append(vals, v)
		}
		if want.Kind() == types.KindRecord {
			shape, err := types.NewShape(keys...)
			if err != nil {
				return types.Value{}, false
			}
			r, err := types.MakeRecord(shape, vals)
			return r, err == nil
		}
		m, err := types.MakeMap(keys, vals)
		if err != nil {
			return types.Value{}, false
		}
		return m, true
	}
	return types.Value{}, false
}

// literalValue converts a number, duration, bool or null literal.
func literalValue(l *syntax.Literal) (types.Value, bool) {
	switch {
	case l.Int != nil:
		n, err := strconv.ParseInt(*l.Int, 10, 64)
		if err != nil {
			return types.Value{}, false
		}
		return types.MakeInt(n), true
	case l.Float != nil:
		f, err := strconv.ParseFloat(*l.Float, 64)
		if err != nil || math.IsInf(f, 0) {
			return types.Value{}, false
		}
		return types.MakeFloat(f), true
	case l.Duration != nil:
		d, err := parseDuration(*l.Duration)
		if err != nil {
			return types.Value{}, false
		}
		return types.MakeDuration(d), true
	case l.Bool != nil:
		return types.MakeBool(*l.Bool == "true"), true
	case l.Null:
		return types.Value{}, true
	}
	return types.Value{}, false
}

// entryKey returns a record entry's key.
func entryKey(en *syntax.RecordEntry) (string, bool) {
	if en.Key != nil {
		return en.Key.Name, true
	}
	if en.StrKey != nil {
		return en.StrKey.Literal()
	}
	return "", false
}

var durationUnits = []struct {
	unit string
	d    time.Duration
}{
	{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"ms", time.Millisecond},
	{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour},
}

// parseDuration parses a duration literal such as 200ms, 1h30m or 2d.
func parseDuration(s string) (time.Duration, error) {
	orig := s
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("invalid duration %q", orig)
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q out of range", orig)
		}
		s = s[i:]
		var unit time.Duration
		for _, u := range durationUnits {
			if strings.HasPrefix(s, u.unit) { // two-letter units come first
				unit = u.d
				s = s[len(u.unit):]
				break
			}
		}
		if unit == 0 {
			return 0, fmt.Errorf("invalid duration unit in %q", orig)
		}
		if n > int64(math.MaxInt64/unit) {
			return 0, fmt.Errorf("duration %q out of range", orig)
		}
		add := time.Duration(n) * unit
		if total > math.MaxInt64-add {
			return 0, fmt.Errorf("duration %q out of range", orig)
		}
		total += add
	}
	return total, nil
}
