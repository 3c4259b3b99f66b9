package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentc/agentc/vm"
)

// IdempotencyKey returns the key of a side effect performed by node's attempt
// in run: "esc(run):esc(node):attempt", where esc %-escapes '%', ':' and every
// byte outside printable ASCII. The key is deterministic (a resumed run derives
// the same key), readable where it is sent (a provider's Idempotency-Key
// header) and parses back with ParseIdempotencyKey.
func IdempotencyKey(run, node string, attempt uint32) string {
	return vm.IdempotencyKey(run, node, attempt) // the format is the VM's checkpoint's
}

// ParseIdempotencyKey is the inverse of IdempotencyKey; a key it did not make
// is ErrInvalid.
func ParseIdempotencyKey(key string) (run, node string, attempt uint32, err error) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 {
		return "", "", 0, fmt.Errorf("idempotency key %q: want run:node:attempt: %w", key, ErrInvalid)
	}
	run, err1 := unescapeKeyPart(parts[0])
	node, err2 := unescapeKeyPart(parts[1])
	n, err3 := strconv.ParseUint(parts[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || run == "" || node == "" || parts[2] != strconv.FormatUint(n, 10) {
		return "", "", 0, fmt.Errorf("idempotency key %q: malformed: %w", key, ErrInvalid)
	}
	if IdempotencyKey(run, node, uint32(n)) != key {
		return "", "", 0, fmt.Errorf("idempotency key %q: not canonical: %w", key, ErrInvalid)
	}
	return run, node, uint32(n), nil
}

func unescapeKeyPart(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", ErrInvalid
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", ErrInvalid
		}
		out = append(out, byte(v))
		i += 2
	}
	return string(out), nil
}
