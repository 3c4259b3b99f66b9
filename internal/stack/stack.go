// Package stack grows a new goroutine's stack in one step.
//
// A goroutine starts with a small stack (the runtime's adaptive starting
// size, the average of the process's goroutines: small in a server full of
// idle connections) and grows it by doubling when a call needs more, each
// growth copying every frame below it. A goroutine that will go deep — a
// request's handler, a run's goroutine — grows it two to four times, deep
// in its calls. Grow, called first, makes one growth while the stack holds
// a frame or two.
package stack

// Grow grows the calling goroutine's stack to hold at least 32 KiB.
//
//go:noinline
func Grow() {
	var pad [16 << 10]byte
	keep(pad[:])
}

//go:noinline
func keep(b []byte) { b[0] = 1 }
