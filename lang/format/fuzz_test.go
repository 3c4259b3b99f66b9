package format

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/lang/syntax"
)

// FuzzFormat checks that formatting never panics and that, for every input
// that parses without errors, it succeeds, is idempotent, re-parses to the
// same tree and keeps every comment and string value. It is seeded from the
// golden files, the examples and the ```agent blocks of the spec.
func FuzzFormat(f *testing.F) {
	for _, seed := range seeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, diags := Bytes("fuzz.agent", src) // must not panic on anything
		if _, pd := syntax.Parse("fuzz.agent", src); len(pd) > 0 {
			if out != nil {
				t.Fatalf("Bytes formatted a file with errors: %v", pd)
			}
			return
		}
		if len(diags) > 0 {
			t.Fatalf("clean parse, but Bytes reported %v", diags)
		}
		checkInvariants(t, "fuzz.agent", src)
	})
}

// seeds collects the in.agent sections of testdata, every examples/**/*.agent
// file and every ```agent block in spec/*.md that exist when the test runs.
func seeds(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		data := mustRead(t, file)
		ar := parseTxtar(data)
		for _, name := range []string{"in.agent", "out.agent"} {
			if b, ok := ar.get(name); ok {
				out = append(out, b)
			}
		}
	}
	root := filepath.Join("..", "..")
	_ = filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".agent") {
			if b, err := os.ReadFile(path); err == nil {
				out = append(out, b)
			}
		}
		return nil
	})
	specs, _ := filepath.Glob(filepath.Join(root, "spec", "*.md"))
	for _, file := range specs {
		if b, err := os.ReadFile(file); err == nil {
			out = append(out, agentBlocks(b)...)
		}
	}
	return out
}

// agentBlocks extracts the bodies of ```agent fenced blocks (info strings
// may add words after "agent", e.g. "agent fail=S101").
func agentBlocks(md []byte) [][]byte {
	var out [][]byte
	var cur *bytes.Buffer
	for ln := range strings.Lines(string(md)) {
		trim := strings.TrimSpace(ln)
		switch {
		case cur == nil && strings.HasPrefix(trim, "```agent") && (len(trim) == 8 || trim[8] == ' '):
			cur = &bytes.Buffer{}
		case cur != nil && trim == "```":
			out = append(out, cur.Bytes())
			cur = nil
		case cur != nil:
			cur.WriteString(ln)
		}
	}
	return out
}

// TestSeedsFormat runs the fuzz invariants over every seed that parses, so
// the examples and spec blocks are checked on every plain go test run.
func TestSeedsFormat(t *testing.T) {
	for _, src := range seeds(t) {
		if _, diags := syntax.Parse("seed.agent", src); len(diags) == 0 {
			checkInvariants(t, "seed.agent", src)
		}
	}
}

// TestCommentEverywhere inserts a comment or a blank line into every
// whitespace gap of the golden inputs in turn (the kind rotates from gap to
// gap); each variant that still parses must satisfy every invariant.
func TestCommentEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		src, _ := parseTxtar(mustRead(t, file)).get("in.agent")
		t.Run(filepath.Base(file), func(t *testing.T) {
			inserts := []string{"/* c */", "// c\n", "\n\n", "/* a\n b */", "\n// c\n"}
			gap := 0
			for i := range len(src) {
				if !isSpace(src[i]) || (i > 0 && isSpace(src[i-1])) {
					continue
				}
				gap++
				ins := inserts[gap%len(inserts)]
				v := make([]byte, 0, len(src)+len(ins))
				v = append(append(append(v, src[:i]...), ins...), src[i:]...)
				if _, diags := syntax.Parse("v.agent", v); len(diags) == 0 {
					checkInvariants(t, "v.agent", v)
				}
			}
		})
	}
}

// FuzzSplice keeps most inputs valid, so it exercises the printer rather
// than the parser's error paths: it inserts the fuzzed bytes into a
// whitespace gap of a seed that parses, and checks the invariants whenever
// the result still parses.
func FuzzSplice(f *testing.F) {
	var valid [][]byte
	for _, s := range seeds(f) {
		if _, diags := syntax.Parse("seed.agent", s); len(diags) == 0 && len(s) > 0 {
			valid = append(valid, s)
		}
	}
	if len(valid) == 0 {
		f.Skip("no valid seeds")
	}
	for i, ins := range []string{"/* c */", "// c\n", "\n\n", "x = 1 ", "\"{a}\"", "[1, 2]"} {
		f.Add(uint(i), uint(i*37), []byte(ins))
	}
	f.Fuzz(func(t *testing.T, which, at uint, ins []byte) {
		src := valid[which%uint(len(valid))]
		var gaps []int
		for i := range len(src) {
			if isSpace(src[i]) {
				gaps = append(gaps, i)
			}
		}
		if len(gaps) == 0 {
			return
		}
		i := gaps[at%uint(len(gaps))]
		v := make([]byte, 0, len(src)+len(ins))
		v = append(append(append(v, src[:i]...), ins...), src[i:]...)
		if _, diags := syntax.Parse("splice.agent", v); len(diags) > 0 {
			return
		}
		checkInvariants(t, "splice.agent", v)
	})
}
