package runtime

import (
	"testing"

	"github.com/agentc/agentc/vm"
)

// TestChangeOpsAreDeltaOps: a state_delta's ops are the VM's delta ops by
// name (the checkpointer copies DeltaOp.String into them).
func TestChangeOpsAreDeltaOps(t *testing.T) {
	for op, want := range map[vm.DeltaOp]string{vm.DeltaSet: ChangeSet, vm.DeltaAppend: ChangeAppend, vm.DeltaMerge: ChangeMerge} {
		if got := op.String(); got != want {
			t.Errorf("%d: %q, want %q", op, got, want)
		}
	}
}
