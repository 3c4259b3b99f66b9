package diag

// Code is a stable diagnostic code such as "S101". Codes are append-only:
// a code is never renumbered or reused for a different finding. The letter
// names the family:
//
//	S  lexical structure and syntax
//	N  names, scopes and imports
//	T  types and expressions
//	G  graph structure and proofs
//	P  policies, tools, skills, models, serve and test blocks
//	B  bytecode (reported by loaders, not by validate)
type Code string

// CodeInfo documents one code. spec/diagnostics.md is generated from Codes;
// every code has an example under compiler/testdata/invalid that a test
// compiles, asserting exactly that code.
type CodeInfo struct {
	Code     Code
	Severity Severity
	Title    string // short name, e.g. "unknown name"
	Doc      string // when it fires
}

// Codes known to the front end and compiler, in code order.
const (
	SyntaxError      Code = "S101"
	InvalidUTF8      Code = "S102"
	FileTooLarge     Code = "S103"
	NestingTooDeep   Code = "S104"
	UnterminatedText Code = "S105"
	InvalidEscape    Code = "S106"
	InvalidNumber    Code = "S107"
	IOError          Code = "S108"

	UnknownName     Code = "N201"
	DuplicateName   Code = "N202"
	ImportCycle     Code = "N203"
	ImportNotFound  Code = "N204"
	UnusedDecl      Code = "N205"
	ReservedName    Code = "N206"
	DuplicateAttr   Code = "N207"
	UnknownAttr     Code = "N208"
	MissingAttr     Code = "N209"
	WrongKind       Code = "N210"
	DuplicateHeader Code = "N211"
	DuplicateImport Code = "N212"
)

// registry is appended to by the packages that own each family (compiler
// registers T, G and P codes in its init) so that the list lives next to the
// checks; lang registers S and N codes here.
var registry = []CodeInfo{
	{SyntaxError, Error, "syntax error", "The text does not match the grammar. One syntax error is reported per top-level declaration; the rest of the file is still checked. A name written with letters outside ASCII is one error, at its first use."},
	{InvalidUTF8, Error, "invalid UTF-8", "The file is not valid UTF-8 text (binary input, or a broken encoding). Nothing else is reported for the file."},
	{FileTooLarge, Error, "file too large", "The file exceeds the 8 MiB source limit."},
	{NestingTooDeep, Error, "nesting too deep", "Brackets, braces or parentheses nest more than 200 levels inside one declaration."},
	{UnterminatedText, Error, "unterminated string or comment", "A string, text block, interpolation or block comment is not closed before the end of the file, or a one-line string before the end of its line; an interpolation not closed before its string's closing quote is one error at its {."},
	{InvalidEscape, Error, "invalid escape", "A backslash escape in a string is not one of \\n \\t \\r \\\\ \\\" \\{ \\} \\uXXXX."},
	{InvalidNumber, Error, "invalid number", "A number or duration literal is out of range."},
	{IOError, Error, "cannot read file", "A source or imported file could not be read."},
	{UnknownName, Error, "unknown name", "A reference names nothing declared in scope (declarations, state fields, nodes, loop variables)."},
	{DuplicateName, Error, "duplicate name", "Two declarations, fields, nodes or tests share one name in the same scope."},
	{ImportCycle, Error, "import cycle", "Files import each other in a cycle."},
	{ImportNotFound, Error, "import not found", "An imported file does not exist or is outside the module root."},
	{UnusedDecl, Warning, "unused declaration", "A declaration is never referenced."},
	{ReservedName, Error, "reserved name", "A node or declaration uses a reserved name (start, end, ...)."},
	{DuplicateAttr, Error, "duplicate attribute", "An attribute is set twice in one block."},
	{UnknownAttr, Error, "unknown attribute", "A block sets an attribute its kind does not have."},
	{MissingAttr, Error, "missing attribute", "A block lacks a required attribute."},
	{WrongKind, Error, "wrong kind of name", "A name refers to a declaration of the wrong kind (a tool where a model is required, ...)."},
	{DuplicateHeader, Error, "duplicate workflow header", "A file has more than one workflow header, or a program has more than one serve block."},
	{DuplicateImport, Warning, "duplicate import", "A file imports the same file twice; the second import has no effect."},
}

// Register adds codes owned by another package. It must be called from init.
func Register(infos ...CodeInfo) { registry = append(registry, infos...) }

// Codes returns every registered code, in registration order.
func Codes() []CodeInfo { return append([]CodeInfo(nil), registry...) }

// Lookup returns the documentation of c.
func Lookup(c Code) (CodeInfo, bool) {
	for _, info := range registry {
		if info.Code == c {
			return info, true
		}
	}
	return CodeInfo{}, false
}
