package memory_test

import (
	"testing"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}
