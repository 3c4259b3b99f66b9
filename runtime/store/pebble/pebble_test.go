package pebble_test

import (
	"testing"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := pebble.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
