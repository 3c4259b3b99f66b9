package bytecode

import "github.com/agentc/agentc/compiler/types"

// sectionDef is everything the format knows about one section (the grammar
// in encode.go; spec/bytecode.md "Sections"). Encode, Decode and Verify
// walk sections in id order and know nothing per section themselves.
type sectionDef struct {
	name string
	// empty is the rule by which Encode omits the section and Decode
	// rejects one that should have been omitted: every section is
	// optional, so a file without one decodes as it did before the
	// section existed.
	empty func(p *Program) bool
	// encode writes the payload of p's section.
	encode func(w *writer, p *Program) error
	// decode reads the payload into p. Sections decode in id order, so a
	// decoder may use the sections before it (sizes: states).
	decode func(r *reader, p *Program)
	// verify checks what Decode does not (cross-references and
	// invariants) in a present (not empty) section, for Verify. It takes
	// and returns the verifier by value: a pointer passed through a func
	// value would move Verify's verifier to the heap.
	verify func(v verifier) verifier
}

// sections is the one table of the file's sections, indexed by id. Ids are
// the bytes in the file, so they are written out, never counted: moving an
// entry must not renumber a section. Adding a section is one entry here
// plus its functions (see budget.go and sizes.go).
var sections = [...]sectionDef{
	1: {
		name:   "meta",
		empty:  func(p *Program) bool { return p.Workflow == "" && p.Doc == "" && len(p.Files) == 0 },
		encode: (*writer).meta,
		decode: (*reader).meta,
		verify: verifier.files,
	},
	2: codecSection("consts", "const", func(p *Program) *[]types.Value { return &p.Consts }, types.AppendValue, types.DecodeValue[string], verifier.consts),
	3: codecSection("types", "type", func(p *Program) *[]*types.Type { return &p.Types }, types.AppendType, types.DecodeType[string], verifier.types),
	4: {
		name:   "funcs",
		empty:  func(p *Program) bool { return len(p.Funcs) == 0 },
		encode: func(w *writer, p *Program) error { w.strs(p.Funcs); return nil },
		decode: func(r *reader, p *Program) { p.Funcs = r.strs() },
		verify: verifier.funcs,
	},
	5:  listSection("states", func(p *Program) *[]State { return &p.States }, 1+spanMin+1, (*writer).state, (*reader).state, verifier.states),
	6:  listSection("chunks", func(p *Program) *[]Chunk { return &p.Chunks }, 5, (*writer).chunk, (*reader).chunk, verifier.chunks),
	7:  listSection("graphs", func(p *Program) *[]Graph { return &p.Graphs }, 6+spanMin, (*writer).graph, (*reader).graph, verifier.graphs),
	8:  listSection("tools", func(p *Program) *[]Tool { return &p.Tools }, 8+spanMin, (*writer).tool, (*reader).tool, verifier.tools),
	9:  listSection("models", func(p *Program) *[]Model { return &p.Models }, 3+spanMin, (*writer).model, (*reader).model, verifier.models),
	10: listSection("agents", func(p *Program) *[]Agent { return &p.Agents }, 14+spanMin, (*writer).agent, (*reader).agent, verifier.agents),
	11: listSection("skills", func(p *Program) *[]Skill { return &p.Skills }, 3+spanMin, (*writer).skill, (*reader).skill, verifier.skills),
	12: listSection("policies", func(p *Program) *[]Policy { return &p.Policies }, 3+spanMin, (*writer).policy, (*reader).policy, verifier.policies),
	13: {
		name:   "serve",
		empty:  func(p *Program) bool { return p.Serve == nil },
		encode: func(w *writer, p *Program) error { return w.serve(p.Serve) },
		decode: func(r *reader, p *Program) { p.Serve = r.serve() },
		verify: func(v verifier) verifier { v.serve(v.p.Serve); return v }, // present: not nil
	},
	14: listSection("tests", func(p *Program) *[]Test { return &p.Tests }, 9+spanMin, (*writer).test, (*reader).test, verifier.tests),
	15: {name: "budgets", empty: budgetsEmpty, encode: (*writer).budgets, decode: (*reader).budgets, verify: verifier.budgets},
	16: {name: "sizes", empty: sizesEmpty, encode: (*writer).sizes, decode: (*reader).sizes, verify: verifier.sizes},
}

// tableSection is a section that is one table of p: empty when the table
// is, encode and decode handle the whole table.
func tableSection[T any](name string, table func(*Program) *[]T,
	encode func(*writer, []T) error, decode func(*reader) []T, verify func(verifier) verifier) sectionDef {
	return sectionDef{
		name:   name,
		empty:  func(p *Program) bool { return len(*table(p)) == 0 },
		encode: func(w *writer, p *Program) error { return encode(w, *table(p)) },
		decode: func(r *reader, p *Program) { *table(p) = decode(r) },
		verify: verify,
	}
}

// listSection is a table of list(X), X encoded by enc and decoded by dec;
// min is the fewest bytes an X encodes to.
func listSection[T any](name string, table func(*Program) *[]T, min int,
	enc func(*writer, *T) error, dec func(*reader, *T), verify func(verifier) verifier) sectionDef {
	return tableSection(name, table,
		func(w *writer, xs []T) error { return eachOf(w, xs, enc) },
		func(r *reader) []T { return list(r, min, dec) }, verify)
}

// codecSection is a table in the types package's own encoding
// (types.AppendValue, types.AppendType); what names an element in errors.
func codecSection[T any](name, what string, table func(*Program) *[]T,
	enc func([]byte, T) ([]byte, error), dec func(string) (T, int, error), verify func(verifier) verifier) sectionDef {
	return tableSection(name, table,
		func(w *writer, xs []T) error { return appendEach(w, what, xs, enc) },
		func(r *reader) []T { return encoded(r, what, dec) }, verify)
}

// sectionOf returns the section with id, or nil when no section has it.
func sectionOf(id int) *sectionDef {
	if id <= 0 || id >= len(sections) {
		return nil
	}
	return &sections[id]
}
