package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Events that outlive their process before their step commits.
//
// A step's persisted events commit with its checkpoint (spec/events.md).
// Two records of an uncommitted step survive a crash, though, and make a
// resumed step skip work whose events would then be lost: a pending write
// (a task of a parallel step that finished: the resumed step does not run
// it again) and a side effect's recorded result (replayed, the tool is not
// called again). So each of those records carries the persisted events the
// task produced for it, and a resumed step puts them back into the step's
// buffer: they commit with the step, with their original ids and times, as
// if the process had not died.
//
// The record's bytes are a carry envelope around the VM's own bytes:
//
//	carry  = 0xA1 uvarint(len(vm)) vm uvarint(n) (uvarint(len(event)) event)*n .
//
// 0xA1 is no tag of the value codec (every VM record is a canonical value,
// spec/values.md), so a record written before envelopes existed (a bare
// value) still reads, with no events.

const carryTag = 0xA1

// wrapCarry returns the record bytes of vm with events (vm itself when
// there are none, so records without events are unchanged).
func wrapCarry(vmBytes []byte, events [][]byte) []byte {
	if len(events) == 0 && (len(vmBytes) == 0 || vmBytes[0] != carryTag) {
		return vmBytes
	}
	n := 1 + binary.MaxVarintLen64*(2+len(events)) + len(vmBytes)
	for _, e := range events {
		n += len(e)
	}
	b := make([]byte, 0, n)
	b = append(b, carryTag)
	b = binary.AppendUvarint(b, uint64(len(vmBytes)))
	b = append(b, vmBytes...)
	b = binary.AppendUvarint(b, uint64(len(events)))
	for _, e := range events {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b
}

// unwrapCarry splits record bytes into the VM's bytes and the carried
// events.
func unwrapCarry(b []byte) (vmBytes []byte, events [][]byte, err error) {
	if len(b) == 0 || b[0] != carryTag {
		return b, nil, nil
	}
	p := b[1:]
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, errors.New("runtime: malformed carry envelope")
		}
		out := p[k : k+int(n)]
		p = p[k+int(n):]
		return out, nil
	}
	if vmBytes, err = next(); err != nil {
		return nil, nil, err
	}
	cnt, k := binary.Uvarint(p)
	if k <= 0 || cnt > uint64(len(p)) {
		return nil, nil, errors.New("runtime: malformed carry envelope")
	}
	p = p[k:]
	events = make([][]byte, 0, cnt)
	for range cnt {
		e, err := next()
		if err != nil {
			return nil, nil, err
		}
		events = append(events, e)
	}
	if len(p) != 0 {
		return nil, nil, errors.New("runtime: malformed carry envelope: trailing bytes")
	}
	return vmBytes, events, nil
}

// scopeKey is a host task of the run's own graph: node index and map item.
type scopeKey struct{ node, item int }

// scopeOf maps a VM task path ("graph/node", "graph/node/3", optionally
// followed by "@step" as in effect ids) to its task.
func (a *activeRun) scopeOf(task string) (scopeKey, bool) {
	task, _, _ = strings.Cut(task, "@")
	rel, ok := strings.CutPrefix(task, a.root+"/")
	if !ok {
		return scopeKey{}, false
	}
	name, itemStr, hasItem := strings.Cut(rel, "/")
	item := -1
	if hasItem {
		n, err := strconv.Atoi(itemStr)
		if err != nil || n < 0 {
			return scopeKey{}, false
		}
		item = n
	}
	for i := range a.graph.Nodes {
		if a.graph.Nodes[i].Name == name {
			return scopeKey{node: i, item: item}, true
		}
	}
	return scopeKey{}, false
}

// carryEvents encodes the buffered persisted events of task (a VM task
// path) for a record that makes a resumed step skip them: all of them for a
// pending write (the task will not run again), or, with claim, those no
// earlier record of this step carries (a side effect's result: the task
// runs again and replays its effects one by one).
func (a *activeRun) carryEvents(task string, claim bool) ([][]byte, error) {
	sk, ok := a.scopeOf(task)
	if !ok {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [][]byte
	seen := 0
	for _, t := range a.tasks {
		if t.node != sk.node || t.item != sk.item {
			continue
		}
		seen++
		if claim && seen <= a.claimed[sk] {
			continue
		}
		b, err := EncodeEvent(t.ev)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if claim {
		if a.claimed == nil {
			a.claimed = map[scopeKey]int{}
		}
		a.claimed[sk] = seen
	}
	return out, nil
}

// restoreEvents puts events carried by a record back into the current
// step's buffer, under task, as already claimed by that record.
func (a *activeRun) restoreEvents(task string, events [][]byte) error {
	if len(events) == 0 {
		return nil
	}
	sk, ok := a.scopeOf(task)
	if !ok {
		return fmt.Errorf("runtime: events carried by %s: not a task of %s", task, a.root)
	}
	evs := make([]*Event, len(events))
	for i, b := range events {
		e, err := DecodeEvent(b)
		if err != nil {
			return fmt.Errorf("runtime: events carried by %s: %w", task, err)
		}
		evs[i] = e
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.claimed == nil {
		a.claimed = map[scopeKey]int{}
	}
	for _, e := range evs {
		a.tasks = append(a.tasks, taskEvent{node: sk.node, item: sk.item, ev: e})
	}
	a.claimed[sk] += len(evs)
	return nil
}
