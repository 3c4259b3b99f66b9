package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the real agentc command in-process as
// "agentc", with its real exit codes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentc": func() { os.Exit(run(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar: end-to-end CLI behaviour,
// asserting exit codes and output.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("AGENTC_DATA", env.WorkDir+"/.agentc")
			return nil
		},
	})
}
