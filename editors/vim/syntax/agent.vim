" Vim syntax file
" Language:    agentc workflow files (*.agent)
" Maintainer:  the agentc project (editors/vim in the agentc repository)
" Works with:  Vim 8 or later, Neovim
"
" The lexical rules follow lang/syntax/lexer.go. The keyword lines between
" the BEGIN KEYWORDS and END KEYWORDS markers are generated from
" lang/syntax/keywords.go: regenerate them with `go test ./editors -update`.

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpoptions
set cpoptions&vim

syntax case match
syntax sync fromstart

" BEGIN KEYWORDS
" Generated from lang/syntax/keywords.go by `go test ./editors -update`; do not edit.
syntax keyword agentDeclaration agent compaction evolution graph import memory model recall serve skill state summary test tool type workflow
syntax keyword agentNode end interrupt join llm map node set start wait
syntax keyword agentClause all answer any backoff before budget builtin cache catch concurrency else exec expect from http input into max mcp on otherwise output reduce replay retry returns run timeout ttl until when
syntax keyword agentOperatorWord and in not or
syntax keyword agentConstant false null true
syntax keyword agentType bool duration error float int json list messages secret string
" END KEYWORDS

" Operators and punctuation. Multi-character operators are defined after the
" single-character ones so they win where both start.
syntax match agentOperator "[-+*/%<>=!?|]"
syntax match agentOperator "==\|!=\|<=\|>=\|\.\."
syntax match agentArrow "->"

" Names: declared names after a column-1 declaration keyword, node names,
" what a call node runs, and stdlib calls.
syntax match agentDeclName "\%(^\%(workflow\|skill\|model\|summary\|compaction\|recall\|memory\|evolution\)\s\+\)\@<=\h\w*"
syntax match agentTypeName "\%(^\%(type\|state\)\s\+\)\@<=\h\w*"
syntax match agentFuncName "\%(\<\%(tool\|agent\|graph\|llm\)\s\+\)\@<=\h\w*"
syntax match agentFuncName "\%(\<node\s\+\)\@<=\h\w*"
syntax match agentFunction "\<\h\w*\ze("

" Numbers: 42, 4.2, 1e3, and durations 200ms, 1h30m, 2d (defined in this
" order so the longest reading wins).
syntax match agentBadNumber "\<\d[[:alnum:]_.]*"
syntax match agentInt "\<\d\+\>"
syntax match agentFloat "\<\d\+\%(\.\d\+\%([eE][+-]\=\d\+\)\=\|[eE][+-]\=\d\+\)\>"
syntax match agentDuration "\<\d\+\%(ms\|[smhd]\)\%(\d\+\%(ms\|[smhd]\)\)*\>"

" Strings: "..." (ends at the line end if unterminated) and """...""" text
" blocks, with escapes, {{ }} brace escapes and {expr} interpolation.
" Interpolations may hold strings, which may hold interpolations.
syntax cluster agentStringContent contains=agentBadEscape,agentEscape,agentInterp,agentBraceEscape,agentBadBrace,@Spell
syntax region agentString start=+"+ skip=+\\\\\|\\"+ end=+"+ end=+$+ contains=@agentStringContent
syntax region agentTextBlock start=+"""+ skip=+\\\\\|\\"+ end=+"""+ contains=@agentStringContent fold
syntax match agentBadEscape +\\.+ contained
syntax match agentEscape +\\\%(u\x\{4}\|[ntr\\"{}u]\)+ contained
syntax match agentBadBrace +}+ contained
syntax region agentInterp matchgroup=agentInterpDelim start=+{+ end=+}+ contained contains=@agentExpr
syntax match agentBraceEscape +{{\|}}+ contained
syntax region agentInterpBraces start=+{+ end=+}+ contained transparent contains=@agentExpr

" Comments (defined last: // wins over the / operator).
syntax keyword agentTodo TODO FIXME XXX NOTE contained
syntax match agentLineComment "//.*$" contains=agentTodo,@Spell
syntax region agentBlockComment start="/\*" end="\*/" contains=agentTodo,@Spell fold

" Braces fold; they are transparent, so they do not change the colors.
syntax region agentBlock start="{" end="}" transparent fold contains=TOP

syntax cluster agentExpr contains=agentDeclaration,agentNode,agentClause,agentOperatorWord,agentConstant,agentType,agentOperator,agentArrow,agentFunction,agentBadNumber,agentInt,agentFloat,agentDuration,agentString,agentTextBlock,agentLineComment,agentBlockComment,agentInterpBraces

highlight default link agentDeclaration  Keyword
highlight default link agentNode         Statement
highlight default link agentClause       Keyword
highlight default link agentOperatorWord Operator
highlight default link agentConstant     Constant
highlight default link agentType         Type
highlight default link agentOperator     Operator
highlight default link agentArrow        Operator
highlight default link agentDeclName     Identifier
highlight default link agentTypeName     Type
highlight default link agentFuncName     Function
highlight default link agentFunction     Function
highlight default link agentBadNumber    Error
highlight default link agentInt          Number
highlight default link agentFloat        Float
highlight default link agentDuration     Number
highlight default link agentString       String
highlight default link agentTextBlock    String
highlight default link agentBadEscape    Error
highlight default link agentEscape       SpecialChar
highlight default link agentBraceEscape  SpecialChar
highlight default link agentBadBrace     Error
highlight default link agentInterpDelim  Delimiter
highlight default link agentTodo         Todo
highlight default link agentLineComment  Comment
highlight default link agentBlockComment Comment

let b:current_syntax = 'agent'

let &cpoptions = s:cpo_save
unlet s:cpo_save
