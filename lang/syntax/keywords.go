package syntax

import "slices"

// KeywordClass groups keywords for highlighting and for the splitter.
type KeywordClass string

const (
	// ClassDeclaration words start a top-level declaration.
	ClassDeclaration KeywordClass = "declaration"
	// ClassNode words name a node kind or a built-in node.
	ClassNode KeywordClass = "node"
	// ClassClause words introduce clauses, edge conditions and block items.
	ClassClause KeywordClass = "clause"
	// ClassOperator words are expression operators.
	ClassOperator KeywordClass = "operator"
	// ClassConstant words are literal constants.
	ClassConstant KeywordClass = "constant"
	// ClassType words are built-in type names.
	ClassType KeywordClass = "type"
)

// Keyword is one reserved-looking word of the language. Keywords are
// contextual: outside the position where the grammar expects them they are
// ordinary identifiers (a state field may be called "input").
type Keyword struct {
	Word  string
	Class KeywordClass
}

// keywords is the one keyword table. The editor grammars are checked
// against it by a golden test (editors/), and the splitter uses the
// declaration class.
var keywords = []Keyword{
	{"workflow", ClassDeclaration},
	{"import", ClassDeclaration},
	{"model", ClassDeclaration},
	{"type", ClassDeclaration},
	{"tool", ClassDeclaration},
	{"skill", ClassDeclaration},
	{"state", ClassDeclaration},
	{"summary", ClassDeclaration},
	{"compaction", ClassDeclaration},
	{"recall", ClassDeclaration},
	{"memory", ClassDeclaration},
	{"evolution", ClassDeclaration},
	{"agent", ClassDeclaration},
	{"graph", ClassDeclaration},
	{"serve", ClassDeclaration},
	{"test", ClassDeclaration},

	{"node", ClassNode},
	{"llm", ClassNode},
	{"set", ClassNode},
	{"map", ClassNode},
	{"interrupt", ClassNode},
	{"join", ClassNode},
	{"wait", ClassNode},
	{"start", ClassNode},
	{"end", ClassNode},

	{"when", ClassClause},
	{"otherwise", ClassClause},
	{"max", ClassClause},
	{"else", ClassClause},
	{"into", ClassClause},
	{"retry", ClassClause},
	{"backoff", ClassClause},
	{"on", ClassClause},
	{"timeout", ClassClause},
	{"until", ClassClause},
	{"catch", ClassClause},
	{"cache", ClassClause},
	{"ttl", ClassClause},
	{"concurrency", ClassClause},
	{"returns", ClassClause},
	{"from", ClassClause},
	{"input", ClassClause},
	{"output", ClassClause},
	{"run", ClassClause},
	{"builtin", ClassClause},
	{"http", ClassClause},
	{"exec", ClassClause},
	{"mcp", ClassClause},
	{"reduce", ClassClause},
	{"all", ClassClause},
	{"any", ClassClause},
	{"replay", ClassClause},
	{"answer", ClassClause},
	{"expect", ClassClause},
	{"before", ClassClause},
	{"budget", ClassClause},

	{"and", ClassOperator},
	{"or", ClassOperator},
	{"not", ClassOperator},
	{"in", ClassOperator},

	{"true", ClassConstant},
	{"false", ClassConstant},
	{"null", ClassConstant},

	{"string", ClassType},
	{"int", ClassType},
	{"float", ClassType},
	{"bool", ClassType},
	{"duration", ClassType},
	{"list", ClassType},
	{"json", ClassType},
	{"messages", ClassType},
	{"secret", ClassType},
	{"error", ClassType},
}

// Keywords returns the keyword table sorted by class, then word.
func Keywords() []Keyword {
	out := slices.Clone(keywords)
	slices.SortFunc(out, func(a, b Keyword) int {
		if a.Class != b.Class {
			if a.Class < b.Class {
				return -1
			}
			return 1
		}
		if a.Word < b.Word {
			return -1
		}
		if a.Word > b.Word {
			return 1
		}
		return 0
	})
	return out
}

var declKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range keywords {
		if k.Class == ClassDeclaration {
			m[k.Word] = true
		}
	}
	return m
}()

// IsDeclKeyword reports whether word starts a top-level declaration.
func IsDeclKeyword(word string) bool { return declKeywords[word] }
