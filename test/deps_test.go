// Package test holds cross-package tests: the import rules of the module,
// end-to-end and crash tests.
package test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/agentc/agentc"

// allowed lists, for every package of the module, the module packages it
// may import directly; what those may import is allowed transitively. A
// package missing from this table fails the test: adding a package means
// deciding where it sits. This is the authority on layering (lang →
// compiler → vm → runtime → runtime/server → cmd).
var allowed = map[string][]string{
	"lang/diag":   {},
	"lang/syntax": {"lang/diag"},
	"lang/format": {"lang/syntax"},

	"compiler/types":    {},
	"compiler/bytecode": {"compiler/types", "lang/diag"},
	"compiler/builtin":  {"compiler/bytecode", "compiler/types"},
	"compiler":          {"compiler/bytecode", "compiler/builtin", "lang/syntax", "compiler/skillmd", "compiler/mcplock"},
	"compiler/skillmd":  {"lang/diag"},
	// MCP lock files (spec/tools.md "Pinned schemas"): read by the
	// compiler, written by agentc mcp lock through runtime/mcpclient.
	"compiler/mcplock": {"compiler/types"},
	// A command's project: its root, the compiler's configuration over it,
	// the source files named, diagnostics for display.
	"compiler/project": {"compiler", "lang/diag"},

	"vm": {"compiler/bytecode", "compiler/types", "lang/diag"},
	// Upgrades of waiting runs to a new program, proved over bytecode
	// (spec/upgrade.md): the runtime moves runs without the front end.
	"vm/upgrade": {"vm", "compiler/bytecode", "compiler/types", "lang/diag"},

	"runtime":                 {"vm", "vm/upgrade", "runtime/store", "runtime/artifact", "internal/stack"},
	"runtime/store":           {"vm"},
	"runtime/store/pebble":    {"runtime/store"},
	"runtime/store/memory":    {"runtime/store"},
	"runtime/store/postgres":  {"runtime/store"},
	"runtime/store/storetest": {"runtime/store"},
	"runtime/store/dial":      {"runtime/store/pebble", "runtime/store/postgres"},
	"runtime/model":           {"runtime", "runtime/outbound"},
	"runtime/session":         {"runtime"},
	"runtime/runtimetest":     {"compiler", "stdlib"},
	"runtime/history":         {"runtime", "runtime/session"},
	"runtime/artifact":        {"runtime/store"},
	"runtime/workspace":       {"runtime", "runtime/artifact", "runtime/workspace/jail", "runtime/workspace/proc", "stdlib"},
	"runtime/workspace/jail":  {},
	// One command in a process group of its own, its output collected.
	"runtime/workspace/proc": {},
	"runtime/skill":          {"runtime/workspace", "compiler/skillmd"},
	"runtime/evolution":      {"runtime/skill"},
	"runtime/recall":         {"runtime", "runtime/session", "runtime/store", "stdlib"},
	"runtime/memory":         {"runtime", "runtime/recall", "runtime/store"},
	// Retention: plans and applies a policy over a store (spec/storage.md).
	"runtime/retention": {"runtime/store"},
	// OpenTelemetry behind runtime.Observer (spec/telemetry.md).
	"runtime/telemetry": {"runtime"},
	// `run = mcp` tools on the MCP SDK's client (spec/tools.md "MCP tools").
	"runtime/mcpclient": {"runtime", "stdlib/tools", "compiler/mcplock", "runtime/artifact", "runtime/outbound"},
	// What the clients of remote HTTP servers share: URL check, status
	// classification, backoff, a capped reply, error snippets.
	"runtime/outbound": {"vm"},

	// The composition root: a program into a ready Runner (no compiler:
	// it takes a *bytecode.Program), and the test-block runner over it.
	"runtime/assemble": {"runtime", "runtime/artifact", "runtime/evolution", "runtime/history", "runtime/memory",
		"runtime/model", "runtime/recall", "runtime/skill", "runtime/store", "runtime/telemetry", "runtime/workspace", "stdlib/tools", "vm", "runtime/mcpclient",
		"runtime/server", "runtime/server/a2a", "runtime/server/agui", "runtime/server/mcp", "runtime/server/openai", "runtime/store/dial", "runtime/server/ui", "runtime/inspect",
		"runtime/retention"},
	"runtime/testrun": {"runtime/assemble", "runtime/store/memory"},

	// The read side over a store, for the CLI and the browser inspector.
	"runtime/inspect": {"runtime", "runtime/session", "runtime/store", "runtime/artifact", "runtime/evolution"},

	"runtime/server":        {"runtime", "runtime/session", "internal/stack"},
	"runtime/server/agui":   {"runtime/server", "internal/jsonscan"},
	"runtime/server/a2a":    {"runtime/server", "runtime/outbound", "internal/jsonrpc"},
	"runtime/server/openai": {"runtime/server", "internal/jsonscan"},
	"runtime/server/mcp":    {"runtime/server", "internal/jsonrpc"},
	// The run inspector: its JSON API over inspect, and its pages.
	"runtime/server/ui": {"runtime/server", "runtime/inspect"},

	"stdlib":       {"compiler/builtin", "compiler/types", "vm"},
	"stdlib/tools": {"stdlib", "runtime", "runtime/workspace", "runtime/workspace/jail", "runtime/workspace/proc", "runtime/outbound"},

	// The language server: the compiler's loader, checker and Info, the
	// formatter, over an overlay of the editor's buffers (no stdlib: the
	// command hands it the universe).
	"editors/lsp": {"compiler", "compiler/project", "compiler/types", "lang/diag", "lang/format", "lang/syntax", "internal/jsonrpc"},

	// What JSON-RPC 2.0 defines (version, standard error codes), for the
	// language server, A2A and MCP.
	"internal/jsonrpc": {},
	// A one-pass reader of valid JSON's members and elements, for the
	// adapters' request fast paths (encoding/json stays the definition).
	"internal/jsonscan": {},
	// A fake OpenAI-compatible endpoint for tests (net/http only).
	"internal/openaitest": {},
	// A side effect cut off mid-call, for the tests of decisions.
	"internal/decidetest": {"compiler/bytecode", "runtime"},
	// The support example's edits the upgrade tests share.
	"internal/upgradetest": {"compiler/bytecode", "runtime/runtimetest"},
	// The test PostgreSQL server and throwaway schemas in it.
	"internal/pgtest": {},
	// The process's CPU time, for benchmarks and harnesses.
	"internal/cputime": {},
	// A deep goroutine's stack grown in one step (a run's, a request's).
	"internal/stack": {},
	// The collector's pacing for a batch command and for a server.
	"internal/gctune": {},
	// The commands over the files a person names, each compiled in its
	// project: agentc test (test blocks offline), agentc mcp lock.
	"internal/batch": {"compiler/project", "lang/diag", "runtime/assemble", "runtime/testrun"},
}

// external pins third-party imports to the one package that owns each.
var external = map[string][]string{
	"github.com/alecthomas/participle":       {"lang/syntax"},
	"github.com/dominikbraun/graph":          {"compiler"},
	"github.com/cockroachdb/pebble":          {"runtime/store/pebble", "bench/vm"},        // bench/vm: the raw synced-batch baseline
	"github.com/openai/openai-go":            {},                                          // tests only: an independent client of runtime/server/openai
	"github.com/modelcontextprotocol/go-sdk": {"runtime/server/mcp", "runtime/mcpclient"}, // the MCP server (its tests also use the SDK's client); `run = mcp` tools
	"github.com/sashabaranov/go-openai":      {"runtime/model"},
	"github.com/tiktoken-go/tokenizer":       {"runtime/history"},
	"github.com/landlock-lsm/go-landlock":    {"runtime/workspace/jail"},
	"github.com/jackc/pgx":                   {"runtime/store/postgres", "internal/pgtest", "bench/replicas"}, // bench/replicas: its throwaway schema and the leases it reads
	"github.com/spf13/cobra":                 {"cmd/agentc"},
	"github.com/spf13/pflag":                 {"cmd/agentc"},  // cobra's flag sets, named in shared flag helpers
	"github.com/pmezard/go-difflib":          {"lang/format"}, // fmt -d
	"gopkg.in/yaml.v3":                       {"compiler/skillmd", "runtime/assemble", "runtime/model"},
	"golang.org/x/text":                      {"runtime"},                // NFKC for preload markers
	"golang.org/x/sys":                       {"runtime/workspace/jail"}, // namespaces, uid maps
	"go.opentelemetry.io/otel":               {"runtime/telemetry"},      // the API, SDK and OTLP exporters
}

// thirdParty reports whether imp is outside the standard library and the
// module (its first element names a host).
func thirdParty(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(imp, module+"/")
}

// unrestricted packages may import anything in the module.
func unrestricted(pkg string) bool {
	return pkg == "cmd/agentc" || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "bench") ||
		pkg == "test" || strings.HasPrefix(pkg, "test/") || strings.HasPrefix(pkg, "examples")
}

func closure(pkg string, seen map[string]bool) {
	for _, dep := range allowed[pkg] {
		if !seen[dep] {
			seen[dep] = true
			closure(dep, seen)
		}
	}
}

// imports returns the module-relative package dirs and the non-test imports
// of every Go package in the module.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			out[pkg] = append(out[pkg], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	pkgs := imports(t, root)
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, pkg := range names {
		ok := map[string]bool{}
		closure(pkg, ok)
		_, listed := allowed[pkg]
		if !listed && !unrestricted(pkg) {
			t.Errorf("package %s is not in test/deps_test.go: decide which layer it belongs to", pkg)
			continue
		}
		for _, imp := range pkgs[pkg] {
			if rel, isModule := strings.CutPrefix(imp, module+"/"); isModule {
				if !unrestricted(pkg) && !ok[rel] {
					t.Errorf("%s imports %s, which its layer does not allow", pkg, rel)
				}
				if strings.HasPrefix(rel, "cmd") {
					t.Errorf("%s imports the command %s", pkg, rel)
				}
				continue
			}
			pinned := false
			for prefix, owners := range external {
				if strings.HasPrefix(imp, prefix) {
					pinned = true
					if !slices.Contains(owners, pkg) {
						t.Errorf("%s imports %s; only %v may", pkg, imp, owners)
					}
				}
			}
			if !pinned && thirdParty(imp) {
				t.Errorf("%s imports %s, which test/deps_test.go does not pin: add it to external with the packages that own it", pkg, imp)
			}
		}
	}
}

// TestNoStaleRules: every package the allowed table names exists, so the
// table describes the module as it is.
func TestNoStaleRules(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := imports(t, root)
	for pkg, deps := range allowed {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("allowed lists %s, which is not a package of the module", pkg)
		}
		for _, d := range deps {
			if _, ok := pkgs[d]; !ok {
				t.Errorf("allowed lets %s import %s, which is not a package of the module", pkg, d)
			}
		}
	}
}

// TestRuleTableIsLayered checks that the allowed table itself has no cycle.
func TestRuleTableIsLayered(t *testing.T) {
	for pkg := range allowed {
		seen := map[string]bool{}
		closure(pkg, seen)
		if seen[pkg] {
			t.Errorf("allowed table has a cycle through %s", pkg)
		}
	}
}

// TestRuntimeNeverImportsTheFrontEnd: no non-test package under runtime/
// (but the test helper runtime/runtimetest) imports a lang/... package or a
// compiler package other than compiler/bytecode, compiler/types and
// compiler/skillmd and compiler/mcplock (and the table shapes of compiler/builtin), nor may the
// allowed table let it reach one (lang/diag comes with the VM): the parser
// and the checker are not linked into the runtime.
func TestRuntimeNeverImportsTheFrontEnd(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	okCompiler := map[string]bool{"compiler/bytecode": true, "compiler/types": true, "compiler/skillmd": true, "compiler/builtin": true, "compiler/mcplock": true}
	forbidden := func(rel string) bool {
		return strings.HasPrefix(rel, "lang/") ||
			(rel == "compiler" || strings.HasPrefix(rel, "compiler/")) && !okCompiler[rel]
	}
	for pkg, imps := range imports(t, root) {
		if pkg != "runtime" && !strings.HasPrefix(pkg, "runtime/") || pkg == "runtime/runtimetest" {
			continue
		}
		for _, imp := range imps {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && forbidden(rel) {
				t.Errorf("%s imports %s: the runtime must not link the front end", pkg, rel)
			}
		}
		seen := map[string]bool{}
		closure(pkg, seen)
		for dep := range seen {
			if forbidden(dep) && dep != "lang/diag" { // lang/diag: the VM's positions
				t.Errorf("the allowed table lets %s reach %s", pkg, dep)
			}
		}
	}
}
