package runtime

import "testing"

// TestAnswerTarget: a resume value's key names a node of the runnable, a
// full id, or a path relative to the runnable.
func TestAnswerTarget(t *testing.T) {
	pending := []string{"main/approve", "main/fan/2/sub/approve", "sub/approve"}
	self := func(s string) string { return s }
	for _, c := range []struct {
		key, full string
		i         int
	}{
		{"approve", "main/approve", 0},
		{"main/approve", "main/approve", 0},
		{"sub/approve", "sub/approve", 2},
		{"fan/2/sub/approve", "main/fan/2/sub/approve", 1},
		{"review", "main/review", -1},
		{"other/review", "main/other/review", -1},
	} {
		full, i := AnswerTarget("main", c.key, pending, self)
		if full != c.full || i != c.i {
			t.Errorf("%q: (%q, %d), want (%q, %d)", c.key, full, i, c.full, c.i)
		}
	}
}
