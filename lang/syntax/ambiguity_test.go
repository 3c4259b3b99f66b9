package syntax

import "testing"

// TestAmbiguousPrefixes pins productions whose alternatives share a prefix,
// so a change of parser lookahead cannot silently break them.
func TestAmbiguousPrefixes(t *testing.T) {
	cases := []string{
		`model m { base = env("X", "") other = [a, b] call = f(x)[0].y }`,
		`graph g(S) { node node = set { a = 1 } node -> end start -> node }`,
		`test "t" { model = fast model fast replay "f.yaml" tool cert replay "t.yaml" run = g }`,
		`tool t { input = 3 input { a: string } output list<string>? run = http { url = "x" } }`,
		`type T = "a" | "b"`,
		`state S { xs: list<string> max 5 = [] reduce append max: int ys: list<int>? max 2 }`,
		`type R { a: ("x" | "y")?, b: map<list<int>>, c: { d: string } }`,
		`serve { a2a { path = "/a2a" } agui = "/agui", openai { model = "m" } }`,
		`graph g(S) { node a = map x in xs concurrency 2 { tool t { q = x } retry 2 on [timeout, unavailable] timeout 1s } cache ttl 1h into ys a -> end when not (x in xs) and y not in z or -n < 3 * (2 + 1) % 2 }`,
		`agent a llm { skills = [s: read, t: exec] output = { a: 1, "b c": [1, 2.5, 3e2, 1h30m, true, null] } }`,
		`test "x" { answer approve = { approved: true } expect visited(a) before visited(b) expect len(xs) > 0 }`,
	}
	for _, src := range cases {
		if _, ds := Parse("a.agent", []byte(src)); len(ds) > 0 {
			t.Errorf("%s\n  -> %v", src, ds)
		}
	}
}
