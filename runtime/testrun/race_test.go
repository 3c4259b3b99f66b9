//go:build race

package testrun

// raceEnabled: the race detector slows the repeated runs tenfold, so they
// repeat less.
const raceEnabled = true
