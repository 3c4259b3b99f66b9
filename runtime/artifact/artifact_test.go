package artifact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/pebble"
)

var ctx = context.Background()

func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// backends runs fn against every store backend (the contract).
func backends(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, memory.New()) })
	t.Run("pebble", func(t *testing.T) {
		s, err := pebble.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

func TestRevisions(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		svc := New(st, clock())
		k := Key{App: "app", User: "ann", Session: "s1", Name: "report.md"}
		for i, body := range []string{"first", "second", "third"} {
			m, err := svc.Save(ctx, k, []byte(body), "text/markdown", "run_1")
			if err != nil {
				t.Fatal(err)
			}
			if m.Revision != i+1 || m.Size != len(body) || m.Run != "run_1" || m.MimeType != "text/markdown" {
				t.Errorf("save %d: %+v", i, m)
			}
		}
		latest, err := svc.Get(ctx, k, 0)
		if err != nil || string(latest.Data) != "third" || latest.Revision != 3 {
			t.Fatalf("latest = %+v, %v", latest, err)
		}
		one, err := svc.Get(ctx, k, 1)
		if err != nil || string(one.Data) != "first" || one.Revision != 1 {
			t.Fatalf("rev 1 = %+v, %v", one, err)
		}
		if _, err := svc.Get(ctx, k, 9); !errors.Is(err, ErrNotFound) {
			t.Errorf("rev 9: %v", err)
		}
		revs, err := svc.Revisions(ctx, k)
		if err != nil || len(revs) != 3 || revs[2].Revision != 3 || !revs[0].Created.Before(revs[2].Created) {
			t.Errorf("revisions = %+v, %v", revs, err)
		}
		// Names that share a prefix stay apart; an empty file is kept as empty.
		k2 := Key{App: "app", User: "ann", Session: "s1", Name: "report.md.bak"}
		if _, err := svc.Save(ctx, k2, nil, "", ""); err != nil {
			t.Fatal(err)
		}
		if a, err := svc.Get(ctx, k2, 0); err != nil || a.Revision != 1 || a.Data == nil || len(a.Data) != 0 {
			t.Errorf("empty artifact = %+v, %v", a, err)
		}
		if _, err := svc.Save(ctx, Key{App: "app", User: "ann", Session: "s2", Name: "other.txt"}, []byte("x"), "", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Save(ctx, Key{App: "app", User: "annie", Session: "s1", Name: "report.md"}, []byte("y"), "", ""); err != nil {
			t.Fatal(err)
		}
		list, err := svc.List(ctx, Filter{App: "app", User: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, m := range list {
			got += fmt.Sprintf("%s/%s@%d ", m.Session, m.Name, m.Revision)
		}
		if want := "s1/report.md@3 s1/report.md.bak@1 s2/other.txt@1 "; got != want {
			t.Errorf("list = %q, want %q", got, want)
		}
		list, err = svc.List(ctx, Filter{App: "app", User: "ann", Session: "s2"})
		if err != nil || len(list) != 1 || list[0].Name != "other.txt" {
			t.Errorf("list s2 = %+v, %v", list, err)
		}
		if _, err := svc.Get(ctx, Key{App: "app", User: "bob", Session: "s1", Name: "report.md"}, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("another user's artifact: %v", err)
		}
	})
}

func TestConcurrentSavesGetDistinctRevisions(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		svc := New(st, clock())
		k := Key{App: "app", User: "ann", Session: "s1", Name: "log.txt"}
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := svc.Save(ctx, k, []byte{byte('a' + i)}, "", "")
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		revs, err := svc.Revisions(ctx, k)
		if err != nil || len(revs) != n {
			t.Fatalf("revisions = %d, %v", len(revs), err)
		}
		for i, m := range revs {
			if m.Revision != i+1 {
				t.Errorf("revision %d = %d", i, m.Revision)
			}
		}
	})
}

func TestLimits(t *testing.T) {
	svc := New(memory.New(), clock(), WithMaxSize(4))
	k := Key{App: "app", User: "ann", Session: "s1", Name: "big.bin"}
	if _, err := svc.Save(ctx, k, bytes.Repeat([]byte("x"), 5), "", ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	for _, name := range []string{"", "/etc/passwd", "a/../b", "a//b", `a\b`, "./a", "a\x00b"} {
		if _, err := svc.Save(ctx, Key{App: "app", User: "ann", Session: "s1", Name: name}, nil, "", ""); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := svc.Save(ctx, Key{App: "app", Session: "s1", Name: "a"}, nil, "", ""); err == nil {
		t.Error("a key without a user accepted")
	}
	if _, err := svc.List(ctx, Filter{App: "app"}); err == nil {
		t.Error("list without a user accepted")
	}
}
