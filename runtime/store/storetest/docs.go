package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

func docKeys(ds []store.Doc) []string { return pluck(ds, func(d store.Doc) string { return d.Key }) }

func testDocs(t *testing.T, s store.Store) {
	p := store.DocPath
	must(t, s.ApplyDocs(ctx,
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m1"), Value: []byte("one")},
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m2"), Value: []byte("two")},
		store.DocOp{Coll: "mem", Key: p("app", "ann\x00x", "m1"), Value: []byte("nul user")},
		store.DocOp{Coll: "mem", Key: p("app", "annie", "m1"), Value: []byte("annie")},
		store.DocOp{Coll: "art", Key: p("app", "ann", "m1"), Value: []byte("other collection")},
		store.DocOp{Coll: "mem", Key: p("app", "bob", "m1"), Value: nil},
	))
	v, err := s.GetDoc(ctx, "mem", p("app", "ann", "m2"))
	must(t, err)
	if string(v) != "two" {
		t.Errorf("GetDoc = %q, want two", v)
	}
	if v, err := s.GetDoc(ctx, "mem", p("app", "bob", "m1")); err != nil || len(v) != 0 {
		t.Errorf("empty value: %q, %v", v, err)
	}
	_, err = s.GetDoc(ctx, "art", p("app", "ann", "m2"))
	wantErr(t, "GetDoc missing", err, store.ErrNotFound)

	// A prefix of complete parts selects exactly the documents under it.
	ds, err := s.ListDocs(ctx, "mem", p("app", "ann"), "", 0)
	must(t, err)
	if got, want := fmt.Sprint(docKeys(ds)), fmt.Sprint([]string{p("app", "ann", "m1"), p("app", "ann", "m2")}); got != want {
		t.Errorf("ListDocs(ann) = %q, want %q", got, want)
	}
	if len(ds) == 2 && (string(ds[0].Value) != "one" || string(ds[1].Value) != "two") {
		t.Errorf("ListDocs values = %q, %q", ds[0].Value, ds[1].Value)
	}
	for _, d := range ds {
		if parts, ok := store.SplitDocPath(d.Key); !ok || len(parts) != 3 || parts[1] != "ann" {
			t.Errorf("SplitDocPath(%q) = %q, %v", d.Key, parts, ok)
		}
	}
	// Raw prefixes, after and limit page through a collection in key order.
	all, err := s.ListDocs(ctx, "mem", "", "", 0)
	must(t, err)
	if len(all) != 5 {
		t.Fatalf("ListDocs(all) = %d docs, want 5", len(all))
	}
	var paged []store.Doc
	for after := ""; ; {
		page, err := s.ListDocs(ctx, "mem", "", after, 2)
		must(t, err)
		if len(page) == 0 {
			break
		}
		if len(page) > 2 {
			t.Fatalf("page of %d docs, limit 2", len(page))
		}
		paged = append(paged, page...)
		after = page[len(page)-1].Key
	}
	if fmt.Sprint(docKeys(paged)) != fmt.Sprint(docKeys(all)) {
		t.Errorf("paged %q, want %q", docKeys(paged), docKeys(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Key >= all[i].Key {
			t.Errorf("ListDocs out of order: %q before %q", all[i-1].Key, all[i].Key)
		}
	}

	// IfAbsent fails the whole batch; nothing of it is written.
	err = s.ApplyDocs(ctx,
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m3"), Value: []byte("three")},
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m1"), Value: []byte("replaced"), IfAbsent: true},
	)
	wantErr(t, "IfAbsent on an existing key", err, store.ErrDocExists)
	_, err = s.GetDoc(ctx, "mem", p("app", "ann", "m3"))
	wantErr(t, "write of a failed batch", err, store.ErrNotFound)
	must(t, s.ApplyDocs(ctx, store.DocOp{Coll: "mem", Key: p("app", "ann", "m3"), Value: []byte("three"), IfAbsent: true}))

	// Overwrite and delete; deleting a missing key is a no-op.
	must(t, s.ApplyDocs(ctx,
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m1"), Value: []byte("uno")},
		store.DocOp{Coll: "mem", Key: p("app", "ann", "m2"), Delete: true},
		store.DocOp{Coll: "mem", Key: p("app", "ann", "zz"), Delete: true},
	))
	ds, err = s.ListDocs(ctx, "mem", p("app", "ann"), "", 0)
	must(t, err)
	if len(ds) != 2 || string(ds[0].Value) != "uno" || string(ds[1].Value) != "three" {
		t.Errorf("after overwrite+delete: %q", docKeys(ds))
	}

	// Deferred ops are written (visible at once) and checked like any other.
	must(t, s.ApplyDocs(ctx, store.DocOp{Coll: "mem", Key: p("app", "ann", "d1"), Value: []byte("later"), IfAbsent: true, Deferred: true}))
	wantErr(t, "deferred IfAbsent on an existing key",
		s.ApplyDocs(ctx, store.DocOp{Coll: "mem", Key: p("app", "ann", "d1"), Value: []byte("again"), IfAbsent: true, Deferred: true}), store.ErrConflict)
	must(t, s.ApplyDocs(ctx, store.DocOp{Coll: "mem", Key: p("app", "ann", "d1"), Value: []byte("settled"), Deferred: true}))
	if v, err := s.GetDoc(ctx, "mem", p("app", "ann", "d1")); err != nil || string(v) != "settled" {
		t.Errorf("deferred put read back = %q, %v", v, err)
	}
	must(t, s.ApplyDocs(ctx, store.DocOp{Coll: "mem", Key: p("app", "ann", "d1"), Delete: true, Deferred: true}))
	_, err = s.GetDoc(ctx, "mem", p("app", "ann", "d1"))
	wantErr(t, "deferred deletion", err, store.ErrNotFound)

	// Invalid batches.
	for name, ops := range map[string][]store.DocOp{
		"empty collection":   {{Key: "k", Value: []byte("v")}},
		"empty key":          {{Coll: "c", Value: []byte("v")}},
		"IfAbsent deletion":  {{Coll: "c", Key: "k", Delete: true, IfAbsent: true}},
		"key twice in batch": {{Coll: "c", Key: "k"}, {Coll: "c", Key: "k", Delete: true}},
	} {
		wantErr(t, name, s.ApplyDocs(ctx, ops...), store.ErrInvalid)
	}
	_, err = s.ListDocs(ctx, "", "", "", 0)
	wantErr(t, "ListDocs without a collection", err, store.ErrInvalid)

	// Returned bytes are the caller's.
	v, err = s.GetDoc(ctx, "mem", p("app", "ann", "m1"))
	must(t, err)
	v[0] = 'X'
	if v, _ := s.GetDoc(ctx, "mem", p("app", "ann", "m1")); string(v) != "uno" {
		t.Errorf("GetDoc result aliases the store: %q", v)
	}

	// Concurrent IfAbsent puts of one key: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan int, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.ApplyDocs(ctx, store.DocOp{Coll: "rev", Key: "r1", Value: []byte{byte(i)}, IfAbsent: true})
			switch {
			case err == nil:
				wins <- i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("concurrent IfAbsent: %v", err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Errorf("%d concurrent IfAbsent puts won, want 1", n)
	}
}
