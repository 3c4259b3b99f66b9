// Package gctune paces the garbage collector for agentc's two kinds of
// process (spec/serve.md, "Garbage collection"): a batch command, which
// builds a large syntax tree at once, and a server, whose heap is small and
// whose allocation rate is high. An explicit GOGC or GOMEMLIMIT in the
// environment always wins.
package gctune

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// Percent is the collector's target for both kinds of process: the heap
// may grow to 5× what the last cycle found live before the next cycle.
//
// A batch command: parse and check of 10k lines took 142–190 ms CPU at
// Go's default of 100, 78–90 ms at 400.
//
// A server: agentc serve's live heap is a few MiB (Pebble's block cache and
// memtables are outside it), and Go's default starts a cycle every ~4 MiB
// allocated, about every 100 runs, so the collector was running most of the
// time. bench/serve's direct Runner cost 212 µs a run at 100 and 131 at 400;
// the OpenAI server 294 and 192 µs a request, 5,306 and 7,982 requests a
// second; 1,600 measured as 400 did.
const Percent = 400

// limitShare is the part of the memory available to the process that a
// server's soft limit allows the Go heap: a backstop, so that a heap grown to
// 5× a large live one starts collecting before the machine runs out (the
// rest is for Pebble's cache and memtables, outside the Go heap, and the
// operating system).
const limitShare = 2 // one half

// Settings is what a server's pacing is.
type Settings struct {
	// Percent is the collector's target (GOGC); Limit the soft memory
	// limit in bytes (GOMEMLIMIT), 0 for none.
	Percent int
	Limit   int64
	// FromEnv: GOGC or GOMEMLIMIT is set, and the runtime keeps what the
	// environment says.
	FromEnv bool
}

func (s Settings) String() string {
	if s.FromEnv {
		return "garbage collector as GOGC / GOMEMLIMIT set it"
	}
	if s.Limit == 0 {
		return fmt.Sprintf("garbage collector at GOGC=%d (set GOGC or GOMEMLIMIT to choose)", s.Percent)
	}
	return fmt.Sprintf("garbage collector at GOGC=%d, soft memory limit %d MiB (set GOGC or GOMEMLIMIT to choose)", s.Percent, s.Limit>>20)
}

// Batch sets a batch command's pacing (validate, fmt, graph, compile)
// unless GOGC is set.
func Batch(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(Percent)
	}
}

// Server sets a server's pacing, Plan's, and returns it.
func Server(lookup func(string) (string, bool), root fs.FS) Settings {
	s := Plan(lookup, root)
	if !s.FromEnv {
		debug.SetGCPercent(s.Percent)
		if s.Limit > 0 {
			debug.SetMemoryLimit(s.Limit)
		}
	}
	return s
}

// Plan is a server's pacing, given the environment and the file system root
// (the cgroup's limit and /proc/meminfo are read from it): Percent, and a
// soft limit of half the memory available to the process (its cgroup's
// limit, else the machine's; none when neither can be read). Nothing when
// GOGC or GOMEMLIMIT is set.
func Plan(lookup func(string) (string, bool), root fs.FS) Settings {
	_, gogc := lookup("GOGC")
	_, limit := lookup("GOMEMLIMIT")
	if gogc || limit {
		return Settings{FromEnv: true}
	}
	s := Settings{Percent: Percent}
	if avail := available(root); avail > 0 {
		s.Limit = avail / limitShare
	}
	return s
}

// available is the memory the process may use in bytes: the least of its
// cgroup's limit (v2, else v1) and the machine's total; 0 when unknown.
func available(root fs.FS) int64 {
	var least int64
	for _, n := range []int64{cgroupLimit(root), memTotal(root)} {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	return least
}

// unlimited is a cgroup v1 limit that means none (the kernel writes a page
// count near 2^63).
const unlimited = 1 << 60

// cgroupLimit is the memory limit of the process's cgroup, 0 for none or
// unknown: the least limit set on its cgroup or any cgroup above it, read
// where /proc/self/cgroup places it (cgroup v2: "0::/path", memory.max under
// sys/fs/cgroup; v1: the memory controller's line, memory.limit_in_bytes
// under sys/fs/cgroup/memory), then at the root the process sees (a
// container's own cgroup).
func cgroupLimit(root fs.FS) int64 {
	var v2, v1 []string // the process's cgroup paths
	if b, err := fs.ReadFile(root, "proc/self/cgroup"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			// hierarchy-ID:controller-list:cgroup-path
			id, rest, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			ctrls, p, ok := strings.Cut(rest, ":")
			if !ok {
				continue
			}
			switch {
			case id == "0" && ctrls == "":
				v2 = append(v2, p)
			case slices.Contains(strings.Split(ctrls, ","), "memory"):
				v1 = append(v1, p)
			}
		}
	}
	least := int64(0)
	found := false
	take := func(base, file string, paths []string) {
		for _, p := range append(paths, "/") {
			// The cgroup and each above it, up to the root.
			for dir := path.Clean("/" + p); ; dir = path.Dir(dir) {
				if n, ok := readLimit(root, path.Join(base, dir, file)); ok {
					found = true
					if n > 0 && (least == 0 || n < least) {
						least = n
					}
				}
				if dir == "/" {
					break
				}
			}
		}
	}
	take("sys/fs/cgroup", "memory.max", v2)
	if !found {
		take("sys/fs/cgroup/memory", "memory.limit_in_bytes", v1)
	}
	return least
}

// readLimit reads a cgroup limit file: ok when the file is there and says a
// limit, n 0 when it says none ("max", or v1's near-2^63).
func readLimit(root fs.FS, name string) (n int64, ok bool) {
	if !fs.ValidPath(name) {
		return 0, false
	}
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, true
	}
	n, err = strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	if n >= unlimited {
		return 0, true
	}
	return n, true
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unknown.
func memTotal(root fs.FS) int64 {
	b, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > 1<<50 {
			return 0
		}
		return kb << 10
	}
	return 0
}
