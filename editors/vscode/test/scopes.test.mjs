// Scope snapshots of the agentc TextMate grammar, tokenized by the engine VS
// Code itself uses (vscode-textmate + the oniguruma WebAssembly build).
//
//   node --test scopes.test.mjs          compare with snapshots/*.snap
//   UPDATE=1 node --test scopes.test.mjs rewrite the snapshots
//
// One snapshot line per token: `line:col "text" → scopes`, columns 1-based
// in UTF-16 units, the root scope source.agent left out, whitespace-only
// tokens with no scope of their own left out.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const here = path.dirname(fileURLToPath(import.meta.url));
const grammarPath = path.join(here, '..', 'syntaxes', 'agent.tmLanguage.json');
const fixturesDir = path.join(here, 'fixtures');
const snapshotsDir = path.join(here, 'snapshots');
const UPDATE = process.env.UPDATE === '1';
const ROOT = 'source.agent';

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== ROOT) return null;
      return vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath);
    },
  });
  const grammar = await registry.loadGrammar(ROOT);
  assert.ok(grammar, `grammar ${ROOT} did not load from ${grammarPath}`);
  return grammar;
}

const grammar = await loadGrammar();

// tokenize returns every token of src: {line, col, text, scopes} with the
// root scope dropped.
function tokenize(src) {
  const out = [];
  let stack = vsctm.INITIAL;
  src.replace(/\n$/, '').split(/\r?\n/).forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack, 10_000);
    assert.ok(!r.stoppedEarly, `tokenizing line ${i + 1} timed out`);
    for (const t of r.tokens) {
      const text = line.slice(t.startIndex, t.endIndex);
      if (text === '') continue;
      const scopes = t.scopes.filter((s) => s !== ROOT);
      out.push({ line: i + 1, col: t.startIndex + 1, text, scopes });
    }
    stack = r.ruleStack;
  });
  return out;
}

function render(tokens) {
  return tokens
    .filter((t) => !(t.scopes.length === 0 && t.text.trim() === ''))
    .map((t) => `${t.line}:${t.col} ${JSON.stringify(t.text)} → ${t.scopes.join(' ') || '(none)'}`)
    .join('\n') + '\n';
}

const fixtures = fs.readdirSync(fixturesDir).filter((f) => f.endsWith('.agent')).sort();
const tokensOf = Object.fromEntries(
  fixtures.map((f) => [f, tokenize(fs.readFileSync(path.join(fixturesDir, f), 'utf8'))]),
);

// ---- snapshots ----------------------------------------------------------

test('fixtures exist', () => {
  for (const f of ['support.agent', 'strings.agent', 'constructs.agent']) {
    assert.ok(fixtures.includes(f), `fixture ${f} is missing`);
  }
});

for (const f of fixtures) {
  test(`snapshot ${f}`, () => {
    const snap = path.join(snapshotsDir, f.replace(/\.agent$/, '.snap'));
    const actual = render(tokensOf[f]);
    if (UPDATE) {
      fs.mkdirSync(snapshotsDir, { recursive: true });
      fs.writeFileSync(snap, actual);
      return;
    }
    assert.ok(fs.existsSync(snap), `${path.relative(here, snap)} is missing; run with UPDATE=1`);
    const expected = fs.readFileSync(snap, 'utf8');
    if (actual === expected) return;
    const a = actual.split('\n');
    const e = expected.split('\n');
    let i = 0;
    while (i < a.length && i < e.length && a[i] === e[i]) i++;
    assert.fail(
      `${path.relative(here, snap)} differs from the tokens at snapshot line ${i + 1} (run with UPDATE=1 if the change is intended):\n` +
        `  want: ${e[i] ?? '(end)'}\n  got:  ${a[i] ?? '(end)'}`,
    );
  });
}

test('no stale snapshots', () => {
  if (UPDATE) {
    for (const s of fs.readdirSync(snapshotsDir)) {
      if (s.endsWith('.snap') && !fixtures.includes(s.replace(/\.snap$/, '.agent'))) {
        fs.rmSync(path.join(snapshotsDir, s));
      }
    }
  }
  for (const s of fs.readdirSync(snapshotsDir)) {
    if (!s.endsWith('.snap')) continue;
    assert.ok(fixtures.includes(s.replace(/\.snap$/, '.agent')), `snapshot ${s} has no fixture`);
  }
});

// ---- specific scopes ----------------------------------------------------

// find returns the n-th token (0-based) of fixture f whose text is text, on
// the first line containing lineHas.
function find(f, lineHas, text, n = 0) {
  const src = fs.readFileSync(path.join(fixturesDir, f), 'utf8').split(/\r?\n/);
  const line = src.findIndex((l) => l.includes(lineHas)) + 1;
  assert.ok(line > 0, `${f}: no line contains ${JSON.stringify(lineHas)}`);
  const hits = tokensOf[f].filter((t) => t.line === line && t.text === text);
  assert.ok(hits.length > n, `${f}:${line}: no token ${JSON.stringify(text)} (#${n}); tokens: ${JSON.stringify(tokensOf[f].filter((t) => t.line === line).map((t) => t.text))}`);
  return hits[n];
}

function has(tok, scope) {
  assert.ok(tok.scopes.includes(scope), `${tok.line}:${tok.col} ${JSON.stringify(tok.text)} has ${JSON.stringify(tok.scopes)}, want ${scope}`);
}

function lacks(tok, scopePrefix) {
  assert.ok(!tok.scopes.some((s) => s.startsWith(scopePrefix)), `${tok.line}:${tok.col} ${JSON.stringify(tok.text)} has ${JSON.stringify(tok.scopes)}, want no ${scopePrefix}`);
}

function innermost(tok, scope) {
  assert.equal(tok.scopes.at(-1), scope, `${tok.line}:${tok.col} ${JSON.stringify(tok.text)}: innermost scope of ${JSON.stringify(tok.scopes)}`);
}

test('declarations and their names', () => {
  innermost(find('support.agent', 'workflow support', 'workflow'), 'keyword.declaration.agent');
  innermost(find('support.agent', 'workflow support', 'support'), 'entity.name.namespace.workflow.agent');
  innermost(find('support.agent', 'model fast {', 'fast'), 'entity.name.constant.config.agent');
  innermost(find('support.agent', 'type Triage', 'Triage'), 'entity.name.type.agent');
  innermost(find('support.agent', 'state Case', 'Case'), 'entity.name.type.agent');
  innermost(find('support.agent', 'tool cert_scan', 'cert_scan'), 'entity.name.function.agent');
  innermost(find('support.agent', 'agent investigator llm', 'investigator'), 'entity.name.function.agent');
  innermost(find('support.agent', 'agent investigator llm', 'llm'), 'storage.type.kind.agent');
  innermost(find('support.agent', 'graph investigate', 'investigate'), 'entity.name.function.agent');
  innermost(find('support.agent', 'skill diagnostics', 'diagnostics'), 'entity.name.namespace.skill.agent');
  innermost(find('support.agent', 'serve {', 'serve'), 'keyword.declaration.agent');
  innermost(find('support.agent', 'test "expired', 'test'), 'keyword.declaration.agent');
  innermost(find('constructs.agent', 'import "common', 'import'), 'keyword.declaration.agent');
});

test('graph nodes, edges and clauses', () => {
  innermost(find('support.agent', 'node triage', 'node'), 'keyword.control.node.agent');
  innermost(find('support.agent', 'node triage', 'triage'), 'entity.name.function.node.agent');
  innermost(find('support.agent', 'node triage', 'llm'), 'keyword.control.node.agent');
  innermost(find('support.agent', 'node triage', 'investigator'), 'entity.name.function.call.agent');
  innermost(find('support.agent', 'node triage', 'into'), 'keyword.control.clause.agent');
  innermost(find('support.agent', 'tool cert_scan { host', 'tool'), 'keyword.declaration.agent');
  innermost(find('support.agent', 'tool cert_scan { host', 'cert_scan'), 'entity.name.function.call.agent');
  innermost(find('support.agent', 'start   -> triage', 'start'), 'keyword.control.node.agent');
  innermost(find('support.agent', 'start   -> triage', '->'), 'punctuation.separator.arrow.agent');
  innermost(find('support.agent', 'triage  -> end', 'end'), 'keyword.control.node.agent');
  innermost(find('support.agent', 'triage  -> end', 'otherwise'), 'keyword.control.clause.agent');
  innermost(find('support.agent', 'catch -> fallback', 'catch'), 'keyword.control.clause.agent');
  innermost(find('support.agent', 'otherwise max 3', 'max'), 'keyword.control.clause.agent');
  innermost(find('support.agent', 'otherwise max 3', '3'), 'constant.numeric.integer.agent');
  innermost(find('constructs.agent', 'node w ', 'join'), 'keyword.control.node.agent');
  innermost(find('constructs.agent', 'node w ', 'all'), 'keyword.control.clause.agent');
  innermost(find('constructs.agent', 'run    = builtin.now', 'builtin'), 'keyword.control.clause.agent');
  innermost(find('constructs.agent', 'run    = builtin.now', 'now'), 'variable.other.member.agent');
});

test('keywords are contextual: keys, fields, members and calls are not keywords', () => {
  const input = find('constructs.agent', 'input  : string', 'input');
  innermost(input, 'variable.other.property.agent');
  innermost(find('support.agent', '  model       = fast', 'model'), 'variable.other.property.agent');
  innermost(find('support.agent', 'when triage.verdict', 'verdict'), 'variable.other.member.agent');
  innermost(find('strings.agent', 'name  : string = "a {join', 'join'), 'support.function.agent');
  innermost(find('support.agent', 'expect len(evidence)', 'len'), 'support.function.agent');
  innermost(find('constructs.agent', 'expect answer != null', 'answer'), 'variable.other.agent');
  innermost(find('constructs.agent', 'node b ', 'timeout'), 'variable.other.agent');
  innermost(find('constructs.agent', 'node b ', 'answer'), 'variable.other.agent');
  innermost(find('constructs.agent', 'count  : int', 'sum'), 'support.function.reducer.agent');
  innermost(find('constructs.agent', 'items  : list<Item>', 'Item'), 'entity.name.type.agent');
  // the head of a path inside an interpolation is a name
  innermost(find('support.agent', 'logs.internal', 'input'), 'variable.other.agent');
});

test('operators, types and constants', () => {
  innermost(find('constructs.agent', 'w     -> c', 'and'), 'keyword.operator.word.agent');
  innermost(find('constructs.agent', 'w     -> c', 'not'), 'keyword.operator.word.agent');
  innermost(find('constructs.agent', 'w     -> c', 'in'), 'keyword.operator.word.agent');
  innermost(find('constructs.agent', 'w     -> c', '>='), 'keyword.operator.comparison.agent');
  innermost(find('constructs.agent', 'w     -> c', '!='), 'keyword.operator.comparison.agent');
  innermost(find('support.agent', 'port: int', 'int'), 'support.type.agent');
  innermost(find('support.agent', 'port: int', '='), 'keyword.operator.assignment.agent');
  innermost(find('support.agent', 'hosts: list<string>', 'list'), 'support.type.generic.agent');
  innermost(find('support.agent', 'hosts: list<string>', 'string'), 'support.type.agent');
  innermost(find('support.agent', 'feedback: string?', '?'), 'keyword.operator.optional.agent');
  innermost(find('support.agent', 'verdict: "certificate"', '|'), 'keyword.operator.union.agent');
  innermost(find('support.agent', 'approved: true', 'true'), 'constant.language.agent');
  innermost(find('constructs.agent', 'seed = null', 'null'), 'constant.language.agent');
  innermost(find('constructs.agent', 'seed = null', 'false'), 'constant.language.agent');
});

test('numbers and durations', () => {
  innermost(find('support.agent', 'retry 3 backoff', '200ms'), 'constant.numeric.duration.agent');
  innermost(find('support.agent', 'retry 3 backoff', '..'), 'keyword.operator.range.agent');
  innermost(find('support.agent', 'retry 3 backoff', '5s'), 'constant.numeric.duration.agent');
  innermost(find('support.agent', 'timeout 30s', '30s'), 'constant.numeric.duration.agent');
  innermost(find('constructs.agent', 'every = 1h30m', '1h30m'), 'constant.numeric.duration.agent');
  innermost(find('constructs.agent', 'span  : duration = 2d', '2d'), 'constant.numeric.duration.agent');
  innermost(find('support.agent', 'context_window', '128000'), 'constant.numeric.integer.agent');
  innermost(find('support.agent', 'sync_ratio', '0.7'), 'constant.numeric.float.agent');
  innermost(find('constructs.agent', 'score : float', '1.5e3'), 'constant.numeric.float.agent');
  innermost(find('lexical.invalid.agent', 'size = 12abc', '12abc'), 'invalid.illegal.numeric.agent');
  innermost(find('lexical.invalid.agent', 'size = 12abc', '1h30'), 'invalid.illegal.numeric.agent');
  innermost(find('lexical.invalid.agent', 'size = 12abc', '@'), 'invalid.illegal.character.agent');
});

test('comments', () => {
  innermost(find('support.agent', 'provider       = openai', ' any OpenAI-compatible endpoint'), 'comment.line.double-slash.agent');
  innermost(find('support.agent', 'provider       = openai', 'openai'), 'variable.other.agent');
  innermost(find('support.agent', 'examples/support/support.agent', '//'), 'punctuation.definition.comment.agent');
  innermost(find('strings.agent', 'comment spanning lines', '   comment spanning lines, with "no string" and {no interpolation} '), 'comment.block.agent');
  innermost(find('strings.agent', '/* a block', '/*'), 'punctuation.definition.comment.begin.agent');
  innermost(find('strings.agent', 'rec   :', ' a record inside an interpolation '), 'comment.block.agent');
});

test('strings, escapes and interpolation', () => {
  innermost(find('support.agent', 'name           = "gpt-4o-mini"', 'gpt-4o-mini'), 'string.quoted.double.agent');
  const open = find('support.agent', 'Triage: {question}', '{', 1);
  has(open, 'string.quoted.double.agent');
  has(open, 'meta.interpolation.agent');
  innermost(open, 'punctuation.section.interpolation.begin.agent');
  const q = find('support.agent', 'Triage: {question}', 'question');
  has(q, 'string.quoted.double.agent');
  has(q, 'meta.interpolation.agent');
  has(q, 'meta.embedded.expression.agent');
  innermost(q, 'variable.other.agent');
  innermost(find('support.agent', 'Triage: {question}', '}'), 'punctuation.section.interpolation.end.agent');
  const member = find('support.agent', 'Could not reach {triage.hosts}', 'hosts');
  has(member, 'meta.interpolation.agent');
  innermost(member, 'variable.other.member.agent');

  innermost(find('strings.agent', 'workflow strings', '\\"'), 'constant.character.escape.agent');
  innermost(find('strings.agent', 'workflow strings', '\\t'), 'constant.character.escape.agent');
  innermost(find('strings.agent', 'workflow strings', '\\{'), 'constant.character.escape.agent');
  innermost(find('strings.agent', 'workflow strings', '\\u00e9'), 'constant.character.escape.agent');
  innermost(find('lexical.invalid.agent', 'bad \\q', '\\q'), 'invalid.illegal.escape.agent');
  innermost(find('lexical.invalid.agent', 'bad \\q', '}'), 'invalid.illegal.brace.agent');
  // an unterminated string ends at the end of its line
  innermost(find('lexical.invalid.agent', 's : string', 's'), 'variable.other.property.agent');
  const unterminated = find('lexical.invalid.agent', 's : string', 'unterminated');
  assert.deepEqual(unterminated.scopes, ['string.quoted.double.agent']);
  const next = tokensOf['lexical.invalid.agent'].find((t) => t.line === unterminated.line + 1 && t.text === '}');
  assert.deepEqual(next?.scopes, ['punctuation.section.braces.end.agent']);

  const esc = find('strings.agent', 'json  : string', '{{');
  has(esc, 'string.quoted.double.agent');
  lacks(esc, 'meta.interpolation');
  innermost(esc, 'constant.character.escape.agent');
  innermost(find('strings.agent', 'json  : string', '}}'), 'constant.character.escape.agent');
});

test('nested interpolation: strings inside interpolations inside strings', () => {
  // "a {join(xs, ", ")} b"
  const sep = find('strings.agent', 'name  : string = "a {join', ',');
  assert.deepEqual(sep.scopes, [
    'string.quoted.double.agent',
    'meta.interpolation.agent',
    'meta.embedded.expression.agent',
    'punctuation.separator.comma.agent',
  ]);
  const inner = find('strings.agent', 'name  : string = "a {join', ', ');
  assert.deepEqual(inner.scopes, [
    'string.quoted.double.agent',
    'meta.interpolation.agent',
    'meta.embedded.expression.agent',
    'string.quoted.double.agent',
  ]);
  const tail = find('strings.agent', 'name  : string = "a {join', ' b');
  assert.deepEqual(tail.scopes, ['string.quoted.double.agent']);
  const close = find('strings.agent', 'name  : string = "a {join', '"', 3);
  assert.deepEqual(close.scopes, ['string.quoted.double.agent', 'punctuation.definition.string.end.agent']);

  // "outer {lower("inner {upper(name)} text")} end": two levels
  const deepName = find('strings.agent', 'deep  :', 'name');
  assert.equal(deepName.scopes.filter((s) => s === 'meta.interpolation.agent').length, 2, `${deepName.scopes}`);
  assert.deepEqual(find('strings.agent', 'deep  :', ' end').scopes, ['string.quoted.double.agent']);

  // a record literal's braces do not end the interpolation
  const c = find('strings.agent', 'rec   :', 'c');
  assert.equal(c.scopes.filter((s) => s === 'meta.interpolation.agent').length, 1);
  innermost(find('strings.agent', 'rec   :', '}', 2), 'punctuation.section.interpolation.end.agent');
});

test('text blocks', () => {
  const open = find('support.agent', 'instruction = """', '"""');
  innermost(open, 'punctuation.definition.string.begin.agent');
  has(open, 'string.quoted.triple.agent');
  const body = find('support.agent', 'You investigate TLS', '    You investigate TLS incidents. Use cert_scan for evidence. Cite event ids.');
  assert.deepEqual(body.scopes, ['string.quoted.triple.agent']);
  const brace = find('support.agent', 'Reply with JSON', '{{');
  has(brace, 'string.quoted.triple.agent');
  innermost(brace, 'constant.character.escape.agent');
  lacks(find('support.agent', 'Reply with JSON', '"verdict": "..."'), 'meta.interpolation');
  innermost(find('support.agent', 'Reply with JSON', '}}'), 'constant.character.escape.agent');

  const name = find('strings.agent', 'Dear {name}', 'name');
  has(name, 'string.quoted.triple.agent');
  has(name, 'meta.interpolation.agent');
  const quotes = find('strings.agent', 'literal braces', ' and "quotes" and "" inside.');
  assert.deepEqual(quotes.scopes, ['string.quoted.triple.agent']);
  const plus = find('strings.agent', 'Total: {len(xs) + 1}', '+');
  has(plus, 'string.quoted.triple.agent');
  innermost(plus, 'keyword.operator.arithmetic.agent');
  innermost(find('strings.agent', 'escaped \\"\\"\\"', '\\"', 2), 'constant.character.escape.agent');
  innermost(find('strings.agent', 'inline : string', '"""', 1), 'punctuation.definition.string.end.agent');
  // the block is closed: what follows on its line is code again
  innermost(find('strings.agent', 'inline : string', 'inline'), 'variable.other.property.agent');
});

// Every word of every keyword list in the grammar gets its class's scope
// in a neutral position. editors_test.go checks these lists against
// lang/syntax; together the two tests cover the whole keyword table.
test('every keyword list word tokenizes with its class scope', () => {
  const raw = JSON.parse(fs.readFileSync(grammarPath, 'utf8'));
  const classes = {
    'keyword-declaration': 'keyword.declaration.agent',
    'keyword-node': 'keyword.control.node.agent',
    'keyword-clause': 'keyword.control.clause.agent',
    'keyword-operator': 'keyword.operator.word.agent',
    'keyword-constant': 'constant.language.agent',
    'keyword-type': 'support.type.agent',
  };
  let n = 0;
  for (const [key, scope] of Object.entries(classes)) {
    const entry = raw.repository[key];
    assert.equal(entry.name, scope, key);
    const words = /\(\?:([a-z_|]+)\)/.exec(entry.match)?.[1]?.split('|') ?? [];
    assert.ok(words.length > 0, `${key} lists no words`);
    for (const w of words) {
      const toks = tokenize(`${w} x`);
      const tok = toks.find((t) => t.text === w);
      assert.ok(tok, `${w} is not one token: ${JSON.stringify(toks)}`);
      assert.equal(tok.scopes.at(-1), scope, `${w}`);
      // and it is an ordinary name where a keyword cannot stand
      assert.equal(tokenize(`x.${w}`).find((t) => t.text === w)?.scopes.at(-1), 'variable.other.member.agent', `x.${w}`);
      assert.equal(tokenize(`${w}: 1`).find((t) => t.text === w)?.scopes.at(-1), 'variable.other.property.agent', `${w}: 1`);
      n++;
    }
  }
  assert.ok(n > 50, `only ${n} keywords`);
});

// ---- language configuration -------------------------------------------

test('language configuration: indentation rules and word pattern', () => {
  const conf = JSON.parse(fs.readFileSync(path.join(here, '..', 'language-configuration.json'), 'utf8'));
  const inc = new RegExp(conf.indentationRules.increaseIndentPattern);
  const dec = new RegExp(conf.indentationRules.decreaseIndentPattern);
  for (const l of ['model fast {', 'graph g(S) input q output r {', '  instruction = """', '  tools = [', '  x = f(', 'node a = set { x = "{y}"']) {
    assert.ok(inc.test(l), `increase indent after ${JSON.stringify(l)}`);
  }
  for (const l of ['  prompt = "Triage: {question}"', '  a { b = 1 }', '  """', '// a {', '  x = """one line"""']) {
    assert.ok(!inc.test(l), `no increase after ${JSON.stringify(l)}`);
  }
  for (const l of ['}', '  }', '  ]', ')', '  """']) assert.ok(dec.test(l), `decrease at ${JSON.stringify(l)}`);
  assert.ok(!dec.test('  x = 1'));
  const word = new RegExp(`^(?:${conf.wordPattern})$`);
  for (const w of ['1h30m', '200ms', '1.5e3', '42', 'cert_scan']) assert.ok(word.test(w), w);
  const pairs = conf.autoClosingPairs.map((p) => p.open);
  for (const p of ['{', '[', '(', '"', '"""', '/*']) assert.ok(pairs.includes(p), `auto-closing ${p}`);
  assert.deepEqual(conf.comments, { lineComment: '//', blockComment: ['/*', '*/'] });
});
