package pebble

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// TestRunRecordVersion1 checks that a run record written by codec version 1
// (no usage) reads as no usage, and one written by version 2 (no first
// event) as an unknown first event, and that the run's end then records
// its usage, written as version 3.
func TestRunRecordVersion1(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	must(t, err)
	defer s.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	_, _, err = s.GetOrCreateSession(ctx, key, t0)
	must(t, err)
	run := store.Run{ID: "run_old", Session: key, Runnable: "triage", ProgramHash: "h", Status: store.RunCompleted,
		Created: t0, Updated: t0, Meta: []byte("m")}
	must(t, s.CreateRun(ctx, run))

	// What version 1 wrote: the fields up to Meta, framed as version 1.
	e := &enc{[]byte{1}}
	v1 := run
	status := string(v1.Status)
	for _, f := range []*string{&v1.ID, &v1.Session.App, &v1.Session.User, &v1.Session.Session, &v1.Runnable, &v1.ProgramHash, &status, &v1.ParentRun} {
		e.str(f)
	}
	e.uint(&v1.ParentStep)
	e.time(&v1.Created)
	e.time(&v1.Updated)
	e.blob(&v1.Meta)
	must(t, s.db.Set(runKey(run.ID), store.EndValue(e.b), pebble.Sync))
	s.heads.drop(run.ID)

	got, err := s.GetRun(ctx, run.ID)
	if err != nil || got.Status != run.Status || string(got.Meta) != "m" || got.Usage != (store.RunUsage{}) || got.FirstEvent != 0 {
		t.Fatalf("a version 1 record reads as %+v, %v", got, err)
	}
	// What version 2 wrote: then the usage.
	e2 := &enc{append([]byte{2}, e.b[1:]...)}
	for _, n := range []uint64{1, 2, 3, 4, 0, 0} {
		e2.uint(&n)
	}
	must(t, s.db.Set(runKey(run.ID), store.EndValue(e2.b), pebble.Sync))
	s.heads.drop(run.ID)
	got, err = s.GetRun(ctx, run.ID)
	if err != nil || got.Usage != (store.RunUsage{ModelCalls: 1, InputTokens: 2, OutputTokens: 3, CachedTokens: 4}) || got.FirstEvent != 0 {
		t.Fatalf("a version 2 record reads as %+v, %v", got, err)
	}
	u := store.RunUsage{ModelCalls: 3, InputTokens: 30, OutputTokens: 3, CachedTokens: 10, Cost: 0.25, Priced: true}
	_, err = s.EndRun(ctx, run.ID, nil, store.RunCompleted, &u, t0.Add(time.Second))
	must(t, err)
	if got, err := s.GetRun(ctx, run.ID); err != nil || got.Usage != u {
		t.Fatalf("after EndRun: %+v, %v, want usage %+v", got.Usage, err, u)
	}
	v, closer, err := s.db.Get(runKey(run.ID))
	must(t, err)
	if v[0] != store.CodecVersion || store.CodecVersion != 3 {
		t.Errorf("the run record is written as version %d, want 3", v[0])
	}
	closer.Close()

	// A bad usage is a corrupt record.
	bad := append([]byte(nil), e.b...)
	for _, n := range []uint64{1, 2, 3, 4, 0x7ff8000000000001 /* NaN */, 0} {
		bad = binary.AppendUvarint(bad, n)
	}
	must(t, s.db.Set(runKey(run.ID), store.EndValue(bad), pebble.Sync))
	s.heads.drop(run.ID)
	if _, err := s.GetRun(ctx, run.ID); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a record with a NaN cost: %v, want ErrCorrupt", err)
	}
}

// TestRunCodecSize: a run record's size estimate holds its encoding, the
// largest numbers included, so that encoding it allocates once.
func TestRunCodecSize(t *testing.T) {
	big := store.Run{ID: "run_01KD6Y4H8G0000000000000000", Session: store.SessionKey{App: "app", User: "user@example.com", Session: "a-session-id"},
		Runnable: "triage", ProgramHash: strings.Repeat("f", 64), Status: store.RunInterrupted, ParentRun: "run_01KD6Y4H8G0000000000000001",
		ParentStep: math.MaxUint64, Created: time.Unix(math.MinInt64/2, 999_999_999), Updated: time.Unix(math.MaxInt64/2, 999_999_999),
		Meta: []byte("meta"), FirstEvent: math.MaxInt64,
		Usage: store.RunUsage{ModelCalls: math.MaxInt64, InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, CachedTokens: math.MaxInt64, Cost: math.MaxFloat64, Priced: true}}
	for _, r := range []store.Run{{ID: "r", Status: store.RunRunning}, big} {
		v := runCodec.value(r)
		if len(v) > runCodec.size(r)+5 {
			t.Errorf("a run record of %d bytes, estimated %d + 5", len(v), runCodec.size(r))
		}
	}
}
