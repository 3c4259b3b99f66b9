package syntax

// Expressions: one struct per precedence level, loosest first, so the EBNF
// stays whole. Binary levels hold a head operand and a list of (op, operand)
// tails; they associate to the left.

// Expr is an expression.
//
//	Expr = OrExpr .
type Expr struct {
	At
	Or *OrExpr `parser:"@@"`
}

// OrExpr is a disjunction.
//
//	OrExpr = AndExpr ( "or" AndExpr )* .
type OrExpr struct {
	At
	Head *AndExpr   `parser:"@@"`
	Tail []*AndExpr `parser:"( \"or\" @@ )*"`
}

// AndExpr is a conjunction.
//
//	AndExpr = NotExpr ( "and" NotExpr )* .
type AndExpr struct {
	At
	Head *NotExpr   `parser:"@@"`
	Tail []*NotExpr `parser:"( \"and\" @@ )*"`
}

// NotExpr is a negation or a comparison.
//
//	NotExpr = "not" NotExpr | CmpExpr .
type NotExpr struct {
	At
	Not *NotExpr `parser:"  \"not\" @@"`
	Cmp *CmpExpr `parser:"| @@"`
}

// CmpExpr is a comparison or membership test; comparisons do not chain.
//
//	CmpExpr = AddExpr ( ( "==" | "!=" | "<=" | ">=" | "<" | ">" | "in" | "not" "in" ) AddExpr )? .
type CmpExpr struct {
	At
	Left  *AddExpr `parser:"@@"`
	Op    string   `parser:"( @( \"==\" | \"!=\" | \"<=\" | \">=\" | \"<\" | \">\" | \"in\" | \"not\" \"in\" )"`
	Right *AddExpr `parser:"@@ )?"`
}

// AddExpr is a sum or difference.
//
//	AddExpr = MulExpr ( ( "+" | "-" ) MulExpr )* .
type AddExpr struct {
	At
	Head *MulExpr `parser:"@@"`
	Tail []*AddOp `parser:"@@*"`
}

// AddOp is one "+ x" or "- x" tail.
//
//	AddOp = ( "+" | "-" ) MulExpr .
type AddOp struct {
	At
	Op      string   `parser:"@( \"+\" | \"-\" )"`
	Operand *MulExpr `parser:"@@"`
}

// MulExpr is a product, quotient or remainder.
//
//	MulExpr = Unary ( ( "*" | "/" | "%" ) Unary )* .
type MulExpr struct {
	At
	Head *Unary   `parser:"@@"`
	Tail []*MulOp `parser:"@@*"`
}

// MulOp is one "* x", "/ x" or "% x" tail.
//
//	MulOp = ( "*" | "/" | "%" ) Unary .
type MulOp struct {
	At
	Op      string `parser:"@( \"*\" | \"/\" | \"%\" )"`
	Operand *Unary `parser:"@@"`
}

// Unary is a negation or a postfix expression.
//
//	Unary = "-" Unary | Postfix .
type Unary struct {
	At
	Neg     *Unary   `parser:"  \"-\" @@"`
	Postfix *Postfix `parser:"| @@"`
}

// Postfix is a primary followed by field selections and indexes.
//
//	Postfix = Primary Selector* .
type Postfix struct {
	At
	Primary Primary     `parser:"@@"`
	Sel     []*Selector `parser:"@@*"`
}

// Selector is ".name" or "[expr]".
//
//	Selector = "." Ident | "[" Expr "]" .
type Selector struct {
	At
	Field *Ident `parser:"  \".\" @@"`
	Index *Expr  `parser:"| \"[\" @@ \"]\""`
}

// Primary is an operand.
type Primary interface {
	Node
	primary()
}

// Call is a call of a stdlib function.
//
//	Call = Ident "(" ( Expr ( "," Expr )* ","? )? ")" .
type Call struct {
	At
	Func *Ident  `parser:"@@ \"(\""`
	Args []*Expr `parser:"( @@ ( \",\" @@ )* \",\"? )? \")\""`
}

// Literal is a number, duration, boolean or null.
//
//	Literal = <float> | <duration> | <int> | "true" | "false" | "null" .
type Literal struct {
	At
	Float    *string `parser:"  @Float"`
	Duration *string `parser:"| @Duration"`
	Int      *string `parser:"| @Int"`
	Bool     *string `parser:"| @( \"true\" | \"false\" )"`
	Null     bool    `parser:"| @\"null\""`
}

// Name refers to a state field, loop variable, declaration or builtin.
//
//	Name = Ident .
type Name struct {
	At
	Ident string `parser:"@Ident"`
}

// Paren is a parenthesized expression.
//
//	Paren = "(" Expr ")" .
type Paren struct {
	At
	X *Expr `parser:"\"(\" @@ \")\""`
}

// ListLit is a list literal; an element may carry a ": tag" (skill grants).
//
//	ListLit = "[" ( ListElem ( "," ListElem )* ","? )? "]" .
type ListLit struct {
	At
	Elems []*ListElem `parser:"\"[\" ( @@ ( \",\" @@ )* \",\"? )? \"]\""`
}

// ListElem is one element of a list literal.
//
//	ListElem = Expr ( ":" Ident )? .
type ListElem struct {
	At
	X   *Expr  `parser:"@@"`
	Tag *Ident `parser:"( \":\" @@ )?"`
}

// RecordLit is a record or map literal.
//
//	RecordLit = "{" ( RecordEntry ( "," RecordEntry )* ","? )? "}" .
type RecordLit struct {
	At
	Entries []*RecordEntry `parser:"\"{\" ( @@ ( \",\" @@ )* \",\"? )? \"}\""`
}

// RecordEntry is one "key: value" entry; the key is a name or a string.
//
//	RecordEntry = ( Ident | String ) ":" Expr .
type RecordEntry struct {
	At
	Key    *Ident  `parser:"( @@"`
	StrKey *String `parser:"| @@ ) \":\""`
	Value  *Expr   `parser:"@@"`
}

func (*Call) primary()      {}
func (*Literal) primary()   {}
func (*Name) primary()      {}
func (*Paren) primary()     {}
func (*ListLit) primary()   {}
func (*RecordLit) primary() {}
func (*String) primary()    {}
