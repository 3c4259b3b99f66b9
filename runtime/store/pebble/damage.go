package pebble

import (
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// DamageError reports a damaged store: the file at fault and what is wrong
// with it. It wraps store.ErrCorrupt. The message says what to do.
type DamageError struct {
	Dir  string // the data directory
	File string // the damaged or missing file, relative to Dir ("" when unknown)
	What string // what is wrong, one line
	Err  error  // the underlying error, if any
}

func (e *DamageError) Error() string {
	file := e.File
	if file == "" {
		file = "(file unknown)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "store %s is damaged: %s: %s", e.Dir, file, e.What)
	if e.Err != nil {
		fmt.Fprintf(&b, " (%s)", firstLine(e.Err.Error()))
	}
	fmt.Fprintf(&b, "; nothing was changed. Run `agentc store check --data %s` for details, then `agentc store repair --data %s` (it keeps a copy of what it drops) or restore a backup", e.Dir, e.Dir)
	return b.String()
}

// Unwrap makes a DamageError store.ErrCorrupt (and its cause).
func (e *DamageError) Unwrap() []error {
	if e.Err == nil {
		return []error{store.ErrCorrupt}
	}
	return []error{store.ErrCorrupt, e.Err}
}

func damage(dir, file, what string, err error) error {
	return &DamageError{Dir: dir, File: file, What: what, Err: err}
}

// firstLine keeps the first line of Pebble's multi-line errors.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// fileRef finds a store file named in a Pebble error message.
var fileRef = regexp.MustCompile(`(MANIFEST-\d+|OPTIONS-\d+|marker\.[a-z-]+\.\d+\.[^\s":]+|\d{6,}\.(?:sst|log|blob))`)

// walNum finds "wal 4" / "wal 000004" in Pebble's WAL replay errors.
var walNum = regexp.MustCompile(`(?:replaying wal|corrupt wal) 0*(\d+)`)

// tableNum finds "table 000005" / "sstable 5" / "file 000005" in Pebble's
// table errors.
var tableNum = regexp.MustCompile(`(?:table|file|sstable) 0*(\d+)`)

// namePebbleError turns an error Pebble returned for dir into a short one
// naming the file it is about. Errors that are not corruption are returned
// wrapped with what was being done.
func namePebbleError(dir, doing string, err error) error {
	if err == nil {
		return nil
	}
	var de *DamageError
	if errors.As(err, &de) {
		return err
	}
	msg := fmt.Sprintf("%+v", err)
	corrupt := pebble.IsCorruptionError(err) || errors.Is(err, pebble.ErrCorruption) ||
		strings.Contains(msg, "corrupt") || strings.Contains(msg, "checksum") ||
		strings.Contains(msg, "invariant") || strings.Contains(msg, "no such file")
	if !corrupt {
		return fmt.Errorf("%s %s: %w", doing, dir, err)
	}
	file := ""
	if m := fileRef.FindString(msg); m != "" {
		file = m
	} else if m := walNum.FindStringSubmatch(msg); m != nil {
		file = fmt.Sprintf("%06s.log", m[1])
	} else if m := tableNum.FindStringSubmatch(msg); m != nil {
		file = fmt.Sprintf("%06s.sst", m[1])
	}
	return damage(dir, file, doing+": the engine reports damage", err)
}

// guard runs f and turns a panic inside Pebble (which it raises on some
// damaged files) into a DamageError: a damaged store must not take the
// process down.
func guard(dir, doing string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			perr, ok := r.(error)
			if !ok {
				perr = fmt.Errorf("%v", r)
			}
			msg := fmt.Sprintf("%+v\n%s", perr, debug.Stack())
			file := fileRef.FindString(msg)
			err = damage(dir, file, doing+": the storage engine stopped on an inconsistency", perr)
		}
	}()
	return f()
}
