//go:build race

package openai

// raceEnabled: the race detector's instrumentation moves some values to the
// heap, so allocation counts are checked only without it.
const raceEnabled = true
