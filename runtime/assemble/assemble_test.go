package assemble

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/runtimetest"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestPrepareModels: examples/support's models come from the provider when
// OPENAI_API_KEY is set, else from its first test block's replays (a model
// the block does not replay fails when called); with neither, the assembly
// fails. Every stand-in is announced.
func TestPrepareModels(t *testing.T) {
	prog := runtimetest.Compile(t, os.DirFS("../../examples"), "support/support.agent")
	replay := DefaultReplay(prog)
	if replay == nil || replay.Name != "expired intermediate is reported" {
		t.Fatalf("DefaultReplay = %+v", replay)
	}
	tests := []struct {
		name     string
		env      map[string]string
		replay   *bytecode.Test
		offline  bool
		provider string // of model fast; "" when Prepare fails
		warns    []string
		err      string
	}{
		{"replay without a key", nil, replay, false, "scripted",
			[]string{`no OPENAI_API_KEY; using scripted models from test "expired intermediate is reported" (fixtures support/testdata/expired.yaml, support/testdata/cert_scan.yaml, support/testdata/log_dump.yaml)`,
				`warning: test "expired intermediate is reported" replays no fixture for models strong; calling one fails`}, ""},
		{"provider with a key", map[string]string{"OPENAI_API_KEY": "sk-test"}, replay, false, "openai",
			[]string{`tools cert_scan, log_dump replay the fixtures of test "expired intermediate is reported"`}, ""},
		{"neither", nil, nil, false, "", nil, "no OPENAI_API_KEY and no test block"},
		{"offline ignores the key", map[string]string{"OPENAI_API_KEY": "sk-test"}, replay, true, "scripted", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var warns []string
			a, err := Prepare(Options{Program: prog, Verified: true, Root: "../../examples", Env: envOf(tc.env),
				Replay: tc.replay, Offline: tc.offline, Warn: func(m string) { warns = append(warns, m) }})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Prepare: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := a.Config()
			if got := cfg.Models["fast"].Info().Provider; got != tc.provider {
				t.Errorf("model fast from %q, want %q", got, tc.provider)
			}
			if strong := cfg.Models["strong"]; strong == nil {
				t.Error("model strong has no implementation or stand-in")
			}
			if strings.Join(warns, "\n") != strings.Join(tc.warns, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(tc.warns, "\n"))
			}
			if _, stub := cfg.Tools["session_search"].(*unboundTool); tc.offline != stub {
				t.Errorf("session_search before the store: %T (offline %v)", cfg.Tools["session_search"], tc.offline)
			}
			r, err := a.Runner(memstore.New())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(context.Background())
			if r.Machine() != cfg.Machine {
				t.Error("the Runner loaded the program a second time")
			}
		})
	}
}

// TestEncodingIsKept: the Runner keeps the encoding it is given (and
// refuses one of another program) rather than encoding the program again.
func TestEncodingIsKept(t *testing.T) {
	prog := runtimetest.CompileSource(t, "a.agent", "workflow a\n\nstate S { q: string }\n\ngraph g(S) input q {\n  node n = set { q = q }\n  start -> n\n  n -> end\n}\n")
	other := runtimetest.CompileSource(t, "b.agent", "workflow b\n\nstate S { q: string }\n\ngraph g(S) input q {\n  start -> end\n}\n")
	enc, err := bytecode.Encode(other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(memstore.New(), Options{Program: prog, Verified: true, Encoding: enc})
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a foreign encoding: %v", err)
	}
	own, err := bytecode.Encode(prog)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(memstore.New(), Options{Program: prog, Verified: true, Encoding: own})
	if err != nil {
		t.Fatal(err)
	}
	r.Close(context.Background())
}

// TestTracingFromEnv: OTEL_* turn tracing on for Prepare (its caller
// flushes it with Shutdown), never for an offline assembly (agentc test);
// an exporter agentc does not have fails the assembly.
func TestTracingFromEnv(t *testing.T) {
	prog := runtimetest.CompileSource(t, "a.agent", "workflow a\n\nstate S { q: string }\n\ngraph g(S) input q {\n  node n = set { q = q }\n  start -> n\n  n -> end\n}\n")
	on := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
	tests := []struct {
		name    string
		env     map[string]string
		offline bool
		tracing bool
		err     string
	}{
		{"unset", nil, false, false, ""},
		{"endpoint", on, false, true, ""},
		{"offline", on, true, false, ""},
		{"unsupported", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, false, `OTEL_TRACES_EXPORTER="zipkin" is not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Prepare(Options{Program: prog, Verified: true, Env: envOf(tc.env), Offline: tc.offline})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Tracing() != tc.tracing || (a.Config().Observer != nil) != tc.tracing {
				t.Fatalf("Tracing() = %v, Observer %v; want %v", a.Tracing(), a.Config().Observer, tc.tracing)
			}
			if err := a.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
