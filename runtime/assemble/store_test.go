package assemble

import (
	"strings"
	"testing"
)

// TestResolveStore: --store > AGENTC_STORE > store: in agentc.yaml > the
// data directory, and a target no backend takes is an error naming its
// source.
func TestResolveStore(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env, yaml string
		want, err             string
	}{
		{name: "default: the data directory", want: "data-dir"},
		{name: "agentc.yaml", yaml: "store: postgres://y@127.0.0.1/db\n", want: "postgres://y@127.0.0.1/db"},
		{name: "env over yaml", yaml: "store: postgres://y@127.0.0.1/db\n", env: "/srv/s", want: "/srv/s"},
		{name: "flag over env", flag: "postgresql://f@127.0.0.1/db", env: "/srv/s", want: "postgresql://f@127.0.0.1/db"},
		{name: "bad flag", flag: "mysql://u@h/db", err: "--store: store: \"mysql://…\" is not a store"},
		{name: "bad env", env: "redis://h", err: "AGENTC_STORE: store:"},
		{name: "bad yaml value", yaml: "store: s3://bucket\n", err: "store: in agentc.yaml: store:"},
		{name: "yaml that does not parse", yaml: "store: [\n", err: "agentc.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := projectWith(t, tc.yaml)
			env := func(k string) (string, bool) {
				if k == "AGENTC_STORE" && tc.env != "" {
					return tc.env, true
				}
				return "", false
			}
			got, err := ResolveStore(tc.flag, tc.flag != "", "data-dir", root, env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveStore = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestDataDir: the flag, else AGENTC_DATA, else ./.agentc.
func TestDataDir(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "AGENTC_DATA" && v != "" }
	}
	for _, tc := range []struct{ flag, env, want string }{
		{"flag", "envdir", "flag"},
		{"", "envdir", "envdir"},
		{"", "", ".agentc"},
	} {
		if got := DataDir(tc.flag, env(tc.env)); got != tc.want {
			t.Errorf("DataDir(%q) with AGENTC_DATA=%q = %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}
