package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestServeGCPacing: agentc serve paces the collector for a server and says
// so on standard error (internal/gctune), unless GOGC or GOMEMLIMIT is set,
// which it keeps. A SIGTERM right after the announcement shuts the server
// down (exit 0): its signal handling is installed before it starts.
func TestServeGCPacing(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want *regexp.Regexp
	}{
		{"default", nil, regexp.MustCompile(`agentc: garbage collector at GOGC=400(, soft memory limit \d+ MiB)? \(set GOGC or GOMEMLIMIT to choose\)`)},
		{"GOGC", []string{"GOGC=150"}, regexp.MustCompile(`agentc: garbage collector as GOGC / GOMEMLIMIT set it`)},
		{"GOMEMLIMIT", []string{"GOMEMLIMIT=512MiB"}, regexp.MustCompile(`agentc: garbage collector as GOGC / GOMEMLIMIT set it`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newProject(t, "keep.agent", strings.Replace(keepSource, "graph wait", "graph unserved", 1)+"\nserve { run = echo }\n")
			env := cleanEnv(append([]string{"AGENTC_DATA=" + filepath.Join(root, "data")}, tc.env...)...)
			cmd, _, banner := startServeFile(t, root, env, "keep.agent")
			if !tc.want.MatchString(banner()) {
				t.Errorf("banner:\n%s\nwant a line matching %s", banner(), tc.want)
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("serve: %v\n%s", err, banner())
			}
		})
	}
}
