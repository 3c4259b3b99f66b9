package assemble

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"time"
)

// WallClock is the real clock.
type WallClock struct{}

// Now returns the current time.
func (WallClock) Now() time.Time { return time.Now() }

// AfterFunc runs f after d on its own goroutine (time.AfterFunc).
func (WallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// CryptoEntropy draws from crypto/rand.
type CryptoEntropy struct{}

// Uint64 returns 8 random bytes.
func (CryptoEntropy) Uint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// lookupEnv is the process environment.
var lookupEnv = os.LookupEnv
