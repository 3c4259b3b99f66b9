package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap them with what was being done, so callers
// test with errors.Is and people read the whole message.
var (
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: the write contradicts what is stored (the run exists, the
	// lease is held, the step was committed, a recorded result differs).
	ErrConflict = errors.New("store: conflict")
	// ErrInvalid: the arguments break a documented precondition (an empty
	// id, a delta as a run's first checkpoint, a malformed cursor or key).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrCorrupt: a stored value fails its checksum or framing; the message
	// names the key.
	ErrCorrupt = errors.New("store: corrupt value")
	// ErrLayoutVersion: the data was written with a layout or codec version
	// this build does not read (usually a newer agentc).
	ErrLayoutVersion = errors.New("store: unsupported layout version")
	// ErrLocked: another process (or another open in this one) holds the
	// data directory; the message names the directory and, when known, the
	// holder.
	ErrLocked = errors.New("store: data directory locked")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// ErrDocExists is the ErrConflict of an IfAbsent put of a document whose
// key exists (DocOp.IfAbsent): nothing of its batch was written.
var ErrDocExists = fmt.Errorf("document exists: %w", ErrConflict)

// ErrNoFullSnapshot is the ErrCorrupt of a checkpoint chain that has no full
// snapshot at its start: a delta with nothing to apply it to.
var ErrNoFullSnapshot = fmt.Errorf("no full snapshot before it: %w", ErrCorrupt)
