// Package syntax turns agentc source text into an AST and owns the
// language's concrete syntax:
//
//   - the lexer (lexer.go): a stateful tokenizer for code, "..." strings,
//     """...""" text blocks and {expr} interpolations, with the keyword table
//     (keywords.go) and string decoding (strings.go, String.Segments);
//   - the participle grammar: the AST structs of ast.go and expr.go, whose
//     tags are the language's executable definition. Grammar() prints it as
//     EBNF and spec/grammar.ebnf is that text, pinned by a test;
//   - the recursive-descent parser (rd.go) behind Parse: it builds exactly
//     the AST the grammar describes, without reflection, one top-level
//     declaration at a time (splitDecls), so a syntax error in one
//     declaration does not hide the others; limits (MaxSourceSize,
//     MaxNesting, repetitions, recursion) keep any input from exhausting it;
//   - the differential oracle (rd_test.go): the participle parser run on the
//     same tokens, against which the recursive-descent parser is checked on
//     a corpus, on mutations and generated programs, and by fuzzing.
//
// Every failure is a diag.Diagnostic with a span; Parse always returns a
// File, with BadDecl standing in for a declaration that did not parse.
// Name resolution and type checking belong to the compiler.
package syntax
