package pebble

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/agentc/agentc/runtime/store"
)

// Problem is one thing Check found wrong.
type Problem struct {
	File string `json:"file,omitempty"` // the store file at fault, when known
	What string `json:"what"`
}

func (p Problem) String() string {
	if p.File == "" {
		return p.What
	}
	return p.File + ": " + p.What
}

// Report is what Check found.
type Report struct {
	Dir         string    `json:"dir"`
	WALs        int       `json:"wals"`
	Tables      int       `json:"tables"`
	Keys        int       `json:"keys"`
	Sessions    int       `json:"sessions"`
	Runs        int       `json:"runs"`
	Events      int       `json:"events"`
	Checkpoints int       `json:"checkpoints"`
	Journal     int       `json:"journal"`
	Problems    []Problem `json:"problems"`
}

// OK reports whether Check found nothing wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) add(file, what string) {
	r.Problems = append(r.Problems, Problem{File: file, What: what})
}

func (r *Report) addErr(err error) {
	var de *DamageError
	if errors.As(err, &de) {
		what := de.What
		if de.Err != nil {
			what += " (" + firstLine(de.Err.Error()) + ")"
		}
		r.add(de.File, what)
		return
	}
	r.add("", firstLine(err.Error()))
}

// Check verifies the store in dir without changing it: the directory
// layout, the seal of a cleanly closed store, every WAL (damage that is not
// a torn tail), every table's block checksums, the engine's level
// invariants, every value's frame and record, each run's checkpoint chain (a
// full snapshot before every delta) and each session's ledger and each run's
// journal (sequences from 1 without gaps, the session's last sequence
// matching its ledger). It fails only when it cannot run at all (dir
// unreadable, the store locked by a running process).
func Check(ctx context.Context, dir string) (*Report, error) {
	r := &Report{Dir: dir}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("check store: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("check store: %w", err)
	}
	defer func() { _ = unlockDir(dir, lock) }()
	st, err := preflight(dir)
	if err != nil {
		r.addErr(err)
		return r, nil
	}
	if !st.exists {
		r.add("", "no store in the directory")
		return r, nil
	}
	walBad := false
	if st.sealed {
		if err := verifySeal(dir); err != nil {
			r.addErr(err)
			var de *DamageError
			if errors.As(err, &de) && (classify(de.File) == kindLog || classify(de.File) == kindManifest) {
				walBad = true
			}
		}
	}
	r.WALs = len(st.logs)
	for _, name := range st.logs {
		num, _ := walLogNum(name)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			r.add(name, err.Error())
			continue
		}
		if f := scanWAL(data, num); f.damaged {
			walBad = true
			r.add(name, "committed records would be dropped: "+f.why)
		}
	}
	if err := checkMark(dir); err != nil {
		walBad = true
		r.addErr(err)
	}
	if err := checkManifest(dir, st.manifest); err != nil {
		walBad = true
		r.addErr(err)
	}
	checkTables(ctx, dir, r)
	checkOptions(dir, st.options, r)
	if walBad {
		// The engine would drop the WAL's tail: what it holds is not
		// the store's content, and the checks below would mislead.
		return r, nil
	}
	po := engineOptions()
	po.Lock, po.Logger, po.ReadOnly, po.ErrorIfNotExists = lock, quietLogger{}, true, true
	po.EventListener = events(discardLogger{}, nil)
	var db *pebble.DB
	if err := guard(dir, "open store", func() error {
		var err error
		db, err = pebble.Open(dir, po)
		return err
	}); err != nil {
		err = namePebbleError(dir, "open store", err)
		var de *DamageError
		if errors.As(err, &de) && de.File == "" && strings.Contains(de.Error(), "key=value") {
			de.File = st.options
		}
		r.addErr(err)
		return r, nil
	}
	if db == nil {
		return r, nil
	}
	defer func() { _ = guard(dir, "close store", db.Close) }()
	if err := guard(dir, "check levels", func() error { return db.CheckLevels(nil) }); err != nil {
		r.addErr(namePebbleError(dir, "check levels", err))
	}
	if err := guard(dir, "scan", func() error { return scanKeys(ctx, db, r) }); err != nil {
		r.addErr(namePebbleError(dir, "scan", err))
	}
	return r, nil
}

// checkTables validates the block checksums of every table.
func checkTables(ctx context.Context, dir string, r *Report) {
	es, err := files(dir, func(e os.DirEntry) bool { return classify(e.Name()) == kindTable })
	if err != nil {
		r.add("", err.Error())
		return
	}
	po := engineOptions()
	po.EnsureDefaults()
	ro := po.MakeReaderOptions()
	for _, e := range es {
		r.Tables++
		err := guard(dir, "read table", func() error {
			f, err := vfs.Default.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			readable, err := sstable.NewSimpleReadable(f)
			if err != nil {
				return errors.Join(err, f.Close())
			}
			tr, err := sstable.NewReader(ctx, readable, ro)
			if err != nil {
				return errors.Join(err, readable.Close())
			}
			return errors.Join(tr.ValidateBlockChecksums(), tr.Close())
		})
		if err != nil {
			r.add(e.Name(), "table damaged: "+firstLine(err.Error()))
		}
	}
}

// scanKeys reads every key: frames, records, chains, ledgers.
func scanKeys(ctx context.Context, db *pebble.DB, r *Report) error {
	it, err := db.NewIterWithContext(ctx, nil)
	if err != nil {
		return err
	}
	type seqs struct {
		last uint64
		n    int
		gap  string
	}
	var (
		sessionLast = map[string]uint64{}
		events      = map[string]*seqs{}
		journals    = map[string]*seqs{}
		firstCP     = map[string]bool{} // run → first checkpoint seen
		runs        = map[string]bool{}
		meta        bool
	)
	next := func(m map[string]*seqs, owner string, seq uint64) {
		s := m[owner]
		if s == nil {
			s = &seqs{}
			m[owner] = s
		}
		if seq != s.last+1 && s.gap == "" {
			s.gap = fmt.Sprintf("sequence %d follows %d", seq, s.last)
		}
		s.last = seq
		s.n++
	}
	for it.First(); it.Valid(); it.Next() {
		r.Keys++
		k := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			return errors.Join(err, it.Close())
		}
		if string(k) == string(store.MetaKey()) {
			meta = true
			p, err := store.Payload(k, v)
			if err == nil {
				_, err = metaCodec.decode(k, p, 0)
			}
			if err != nil {
				r.add("", err.Error())
			}
			continue
		}
		kind, parts, err := store.DecodeKey(k)
		if err != nil {
			r.add("", fmt.Sprintf("key %q: %v", k, err))
			continue
		}
		payload, err := store.Payload(k, v)
		if err != nil {
			r.add("", err.Error())
			continue
		}
		switch kind {
		case store.KindSession:
			rec, err := sessionCodec.decode(k, payload, sessionRecord{})
			if err != nil {
				r.add("", err.Error())
				continue
			}
			r.Sessions++
			sessionLast[sessionOf(parts)] = rec.lastSeq
		case store.KindEvent:
			r.Events++
			next(events, sessionOf(parts[:3]), parts[3].Num)
		case store.KindRun:
			if _, err := runCodec.decode(k, payload, store.Run{}); err != nil {
				r.add("", err.Error())
				continue
			}
			r.Runs++
			runs[parts[0].Str] = true
		case store.KindCheckpoint:
			run, step := parts[0].Str, parts[1].Num
			c, err := decodeCheckpoint(k, payload, run, step)
			if err != nil {
				r.add("", err.Error())
				continue
			}
			r.Checkpoints++
			if !firstCP[run] {
				firstCP[run] = true
				if c.Kind != store.Full {
					r.add("", fmt.Sprintf("run %s: checkpoint %d is a delta with no full snapshot before it", run, step))
				}
			}
		case store.KindJournal:
			r.Journal++
			next(journals, parts[0].Str, parts[1].Num)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if !meta && r.Keys > 0 {
		r.add("", "the layout key is missing")
	}
	for _, sess := range slices.Sorted(maps.Keys(sessionLast)) {
		last := sessionLast[sess]
		ev := events[sess]
		switch {
		case ev == nil && last > 0:
			r.add("", fmt.Sprintf("session %s: ledger empty, its record says %d events", sess, last))
		case ev != nil && ev.gap != "":
			r.add("", fmt.Sprintf("session %s: ledger gap: %s", sess, ev.gap))
		case ev != nil && ev.last != last:
			r.add("", fmt.Sprintf("session %s: ledger ends at %d, its record says %d", sess, ev.last, last))
		}
	}
	for _, sess := range slices.Sorted(maps.Keys(events)) {
		if _, ok := sessionLast[sess]; !ok {
			r.add("", fmt.Sprintf("session %s: events without a session record", sess))
		}
	}
	for _, run := range slices.Sorted(maps.Keys(journals)) {
		if j := journals[run]; j.gap != "" && runs[run] {
			r.add("", fmt.Sprintf("run %s: journal gap: %s", run, j.gap))
		}
	}
	return nil
}

func sessionOf(parts []store.Part) string {
	return store.SessionKey{App: parts[0].Str, User: parts[1].Str, Session: parts[2].Str}.String()
}

// discardLogger: Check reports what it finds itself.
type discardLogger struct{}

func (discardLogger) Infof(string, ...any)  {}
func (discardLogger) Errorf(string, ...any) {}
func (discardLogger) Fatalf(format string, args ...any) {
	panic(fmt.Errorf("pebble: "+format, args...))
}

// optionLines parses an OPTIONS file into "section.key" → value.
func optionLines(text string) map[string]string {
	out := map[string]string{}
	section := ""
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "["):
			section = line
		default:
			k, v, _ := strings.Cut(line, "=")
			out[section+"."+k] = v
		}
	}
	return out
}

// earlierOption reports whether value is what an earlier agentc wrote for
// the OPTIONS key: no filters (its first builds), and Pebble's default
// LSM shape (before memTableSize).
func earlierOption(key, value string) bool {
	switch {
	case strings.HasSuffix(key, ".filter_policy"):
		return value == "none"
	case key == "[Options].mem_table_size", key == "[Options].flush_split_bytes":
		return value == "4194304"
	case strings.HasPrefix(key, "[Level \"") && strings.HasSuffix(key, "\"].target_file_size"):
		// 2 MiB in L0, doubling with each level below.
		level, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(key, "[Level \""), "\"].target_file_size"))
		return err == nil && level >= 0 && level < 7 && value == strconv.Itoa(2<<20<<level)
	}
	return false
}

// checkOptions compares the newest OPTIONS file with the options agentc
// opens the store with. The engine rewrites the file on every open, so a
// difference is damage to the file (a flip that still parses, a cut), not
// a setting; repair rewrites it. The cache size is the caller's choice,
// the open files' bound the machine's (maxOpenFiles).
func checkOptions(dir, name string, r *Report) {
	if name == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		r.add(name, err.Error())
		return
	}
	po := engineOptions()
	po.EnsureDefaults()
	want, got := optionLines(po.String()), optionLines(string(b))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if strings.HasSuffix(k, ".cache_size") || strings.HasSuffix(k, ".max_open_files") {
			continue // the caller's, the machine's
		}
		g, ok := got[k]
		switch {
		case ok && g != want[k] && earlierOption(k, g):
			// Written by an earlier agentc: the next open writes the
			// file again with this build's options.
		case !ok:
			r.add(name, fmt.Sprintf("the file is damaged or cut: %s is missing", k))
			return
		case g != want[k]:
			r.add(name, fmt.Sprintf("the file is damaged: %s is %q, agentc writes %q", k, g, want[k]))
			return
		}
	}
}
