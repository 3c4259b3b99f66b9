package gctune

import (
	"strings"
	"testing"
	"testing/fstest"
)

func env(vars ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for _, kv := range vars {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v, true
			}
		}
		return "", false
	}
}

const meminfo = "MemTotal:        8000000 kB\nMemFree:          100000 kB\n"

func TestPlan(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name string
		env  []string
		fs   fstest.MapFS
		want Settings
	}{
		{"GOGC set", []string{"GOGC=100"}, fstest.MapFS{"proc/meminfo": {Data: []byte(meminfo)}}, Settings{FromEnv: true}},
		{"GOMEMLIMIT set", []string{"GOMEMLIMIT=1GiB"}, nil, Settings{FromEnv: true}},
		{"GOGC=off set", []string{"GOGC=off"}, nil, Settings{FromEnv: true}},
		{"the machine's memory", nil, fstest.MapFS{"proc/meminfo": {Data: []byte(meminfo)}},
			Settings{Percent: Percent, Limit: 8000000 << 10 / 2}},
		{"a cgroup v2 limit, the process's own cgroup", nil, fstest.MapFS{
			"proc/meminfo":     {Data: []byte(meminfo)},
			"proc/self/cgroup": {Data: []byte("0::/agentc.slice/serve\n")},
			"sys/fs/cgroup/agentc.slice/serve/memory.max": {Data: []byte("2147483648\n")},
			"sys/fs/cgroup/memory.max":                    {Data: []byte("max\n")},
		}, Settings{Percent: Percent, Limit: gib}},
		{"a cgroup v2 limit at the root a container sees", nil, fstest.MapFS{
			"proc/meminfo":             {Data: []byte(meminfo)},
			"proc/self/cgroup":         {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("1073741824\n")},
		}, Settings{Percent: Percent, Limit: gib / 2}},
		{"cgroup v2 without a limit", nil, fstest.MapFS{
			"proc/meminfo":             {Data: []byte(meminfo)},
			"sys/fs/cgroup/memory.max": {Data: []byte("max\n")},
		}, Settings{Percent: Percent, Limit: 8000000 << 10 / 2}},
		{"a cgroup v1 limit", nil, fstest.MapFS{
			"proc/meminfo": {Data: []byte(meminfo)},
			"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("4294967296\n")},
		}, Settings{Percent: Percent, Limit: 2 * gib}},
		{"cgroup v1 without a limit", nil, fstest.MapFS{
			"proc/meminfo": {Data: []byte(meminfo)},
			"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
		}, Settings{Percent: Percent, Limit: 8000000 << 10 / 2}},
		{"a cgroup limit above the machine's memory", nil, fstest.MapFS{
			"proc/meminfo":             {Data: []byte(meminfo)},
			"sys/fs/cgroup/memory.max": {Data: []byte("1099511627776\n")},
		}, Settings{Percent: Percent, Limit: 8000000 << 10 / 2}},
		{"a cgroup v2 limit on a parent of the process's cgroup", nil, fstest.MapFS{
			"proc/meminfo":                   {Data: []byte(meminfo)},
			"proc/self/cgroup":               {Data: []byte("0::/a/b/c\n")},
			"sys/fs/cgroup/a/b/c/memory.max": {Data: []byte("max\n")},
			"sys/fs/cgroup/a/b/memory.max":   {Data: []byte("536870912\n")},
			"sys/fs/cgroup/a/memory.max":     {Data: []byte("1073741824\n")},
			"sys/fs/cgroup/memory.max":       {Data: []byte("max\n")},
		}, Settings{Percent: Percent, Limit: gib / 4}},
		{"a cgroup v1 limit on the process's memory cgroup", nil, fstest.MapFS{
			"proc/meminfo":     {Data: []byte(meminfo)},
			"proc/self/cgroup": {Data: []byte("5:devices:/\n4:cpu,memory:/process_api/x\n0::/\n")},
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": {Data: []byte("2147483648\n")},
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               {Data: []byte("9223372036854771712\n")},
		}, Settings{Percent: Percent, Limit: gib}},
		{"nothing readable", nil, fstest.MapFS{}, Settings{Percent: Percent}},
		{"unreadable values", nil, fstest.MapFS{
			"proc/meminfo":             {Data: []byte("MemTotal: lots\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("-5\n")},
			"proc/self/cgroup":         {Data: []byte("0::/../../etc\n")},
		}, Settings{Percent: Percent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(env(tc.env...), tc.fs); got != tc.want {
				t.Errorf("Plan = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSettingsString(t *testing.T) {
	for s, want := range map[Settings]string{
		{FromEnv: true}:                "garbage collector as GOGC / GOMEMLIMIT set it",
		{Percent: 400}:                 "garbage collector at GOGC=400 (set GOGC or GOMEMLIMIT to choose)",
		{Percent: 400, Limit: 3 << 30}: "garbage collector at GOGC=400, soft memory limit 3072 MiB (set GOGC or GOMEMLIMIT to choose)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
}
