package store

import (
	"errors"
	"testing"
)

func TestIdempotencyKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		run, node string
		attempt   uint32
		want      string
	}{
		{"run_01J", "pay", 0, "run_01J:pay:0"},
		{"run_1", "team/pay v2:x", 3, "run_1:team/pay%20v2%3Ax:3"},
		{"r%1", "n\x00é", 4294967295, "r%251:n%00%C3%A9:4294967295"},
	} {
		k := IdempotencyKey(tc.run, tc.node, tc.attempt)
		if k != tc.want {
			t.Errorf("IdempotencyKey(%q, %q, %d) = %q, want %q", tc.run, tc.node, tc.attempt, k, tc.want)
		}
		run, node, attempt, err := ParseIdempotencyKey(k)
		if err != nil || run != tc.run || node != tc.node || attempt != tc.attempt {
			t.Errorf("ParseIdempotencyKey(%q) = %q %q %d %v", k, run, node, attempt, err)
		}
	}
	for _, bad := range []string{"", "a:b", "a:b:c:d", "a:b:x", ":b:1", "a::1", "a:b:01", "a:b:-1", "a:b:4294967296", "a%2:b:1", "a%zz:b:1", "a%3a:b:1", "a b:c:1"} {
		if _, _, _, err := ParseIdempotencyKey(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseIdempotencyKey(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
