package syntax

// Expressions: one struct per precedence level, loosest first, so the EBNF
// stays whole. Binary levels hold a head operand and a list of (op, operand)
// tails; they associate to the left.

// Expr is an expression.
//
//	Expr = OrExpr .
type Expr struct {
	At
	Or *OrExpr `@@`
}

// OrExpr is a disjunction.
//
//	OrExpr = AndExpr ( "or" AndExpr )* .
type OrExpr struct {
	At
	Head *AndExpr   `@@`
	Tail []*AndExpr `( "or" @@ )*`
}

// AndExpr is a conjunction.
//
//	AndExpr = NotExpr ( "and" NotExpr )* .
type AndExpr struct {
	At
	Head *NotExpr   `@@`
	Tail []*NotExpr `( "and" @@ )*`
}

// NotExpr is a negation or a comparison.
//
//	NotExpr = "not" NotExpr | CmpExpr .
type NotExpr struct {
	At
	Not *NotExpr `  "not" @@`
	Cmp *CmpExpr `| @@`
}

// CmpExpr is a comparison or membership test; comparisons do not chain.
//
//	CmpExpr = AddExpr ( ( "==" | "!=" | "<=" | ">=" | "<" | ">" | "in" | "not" "in" ) AddExpr )? .
type CmpExpr struct {
	At
	Left  *AddExpr `@@`
	Op    string   `( @( "==" | "!=" | "<=" | ">=" | "<" | ">" | "in" | "not" "in" )`
	Right *AddExpr `@@ )?`
}

// AddExpr is a sum or difference.
//
//	AddExpr = MulExpr ( ( "+" | "-" ) MulExpr )* .
type AddExpr struct {
	At
	Head *MulExpr `@@`
	Tail []*AddOp `@@*`
}

// AddOp is one "+ x" or "- x" tail.
//
//	AddOp = ( "+" | "-" ) MulExpr .
type AddOp struct {
	At
	Op      string   `@( "+" | "-" )`
	Operand *MulExpr `@@`
}

// MulExpr is a product, quotient or remainder.
//
//	MulExpr = Unary ( ( "*" | "/" | "%" ) Unary )* .
type MulExpr struct {
	At
	Head *Unary   `@@`
	Tail []*MulOp `@@*`
}

// MulOp is one "* x", "/ x" or "% x" tail.
//
//	MulOp = ( "*" | "/" | "%" ) Unary .
type MulOp struct {
	At
	Op      string `@( "*" | "/" | "%" )`
	Operand *Unary `@@`
}

// Unary is a negation or a postfix expression.
//
//	Unary = "-" Unary | Postfix .
type Unary struct {
	At
	Neg     *Unary   `  "-" @@`
	Postfix *Postfix `| @@`
}

// Postfix is a primary followed by field selections and indexes.
//
//	Postfix = Primary Selector* .
type Postfix struct {
	At
	Primary Primary     `@@`
	Sel     []*Selector `@@*`
}

// Selector is ".name" or "[expr]".
//
//	Selector = "." Ident | "[" Expr "]" .
type Selector struct {
	At
	Field *Ident `  "." @@`
	Index *Expr  `| "[" @@ "]"`
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
	Func *Ident  `@@ "("`
	Args []*Expr `( @@ ( "," @@ )* ","? )? ")"`
}

// Literal is a number, duration, boolean or null.
//
//	Literal = <float> | <duration> | <int> | "true" | "false" | "null" .
type Literal struct {
	At
	Float    *string `  @Float`
	Duration *string `| @Duration`
	Int      *string `| @Int`
	Bool     *string `| @( "true" | "false" )`
	Null     bool    `| @"null"`
}

// Name refers to a state field, loop variable, declaration or builtin.
//
//	Name = Ident .
type Name struct {
	At
	Ident string `@Ident`
}

// Paren is a parenthesized expression.
//
//	Paren = "(" Expr ")" .
type Paren struct {
	At
	X *Expr `"(" @@ ")"`
}

// ListLit is a list literal; an element may carry a ": tag" (skill grants).
//
//	ListLit = "[" ( ListElem ( "," ListElem )* ","? )? "]" .
type ListLit struct {
	At
	Elems []*ListElem `"[" ( @@ ( "," @@ )* ","? )? "]"`
}

// ListElem is one element of a list literal.
//
//	ListElem = Expr ( ":" Ident )? .
type ListElem struct {
	At
	X   *Expr  `@@`
	Tag *Ident `( ":" @@ )?`
}

// RecordLit is a record or map literal.
//
//	RecordLit = "{" ( RecordEntry ( "," RecordEntry )* ","? )? "}" .
type RecordLit struct {
	At
	Entries []*RecordEntry `"{" ( @@ ( "," @@ )* ","? )? "}"`
}

// RecordEntry is one "key: value" entry; the key is a name or a string.
//
//	RecordEntry = ( Ident | String ) ":" Expr .
type RecordEntry struct {
	At
	Key    *Ident  `( @@`
	StrKey *String `| @@ ) ":"`
	Value  *Expr   `@@`
}

func (*Call) primary()      {}
func (*Literal) primary()   {}
func (*Name) primary()      {}
func (*Paren) primary()     {}
func (*ListLit) primary()   {}
func (*RecordLit) primary() {}
func (*String) primary()    {}
