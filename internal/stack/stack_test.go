package stack

import "testing"

// deep recurses n frames of about 256 bytes each.
//
//go:noinline
func deep(n int) int {
	var frame [32]int
	frame[n%32] = n
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%32]
}

// BenchmarkDeepGoroutine: a new goroutine that goes about 20 KiB deep, its
// stack grown by doubling as its calls need (as started) or once before
// them (grown).
//
//	go test ./internal/stack -bench .
func BenchmarkDeepGoroutine(b *testing.B) {
	for _, c := range []struct {
		name string
		grow bool
	}{{"as started", false}, {"grown", true}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan int)
			for b.Loop() {
				go func() {
					if c.grow {
						Grow()
					}
					done <- deep(80)
				}()
				<-done
			}
		})
	}
}

// TestGrowThenDeep: a goroutine that grew its stack first still calls as
// deep as it needs to (the stack grows again past 32 KiB).
func TestGrowThenDeep(t *testing.T) {
	done := make(chan int)
	go func() {
		Grow()
		done <- deep(1000) // ≈ 256 KiB
	}()
	if got, want := <-done, 1000*1001/2; got != want {
		t.Fatalf("deep(1000) = %d, want %d", got, want)
	}
}
