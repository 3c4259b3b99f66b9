package model

import (
	"context"
	"errors"

	"github.com/agentc/agentc/vm"
)

// ctxError turns the end of ctx into the error a model or tool call returns:
// a passed deadline is kind timeout (described by the context's cause when
// one was given), a cancellation kind canceled. The context's error stays
// the cause so errors.Is keeps working.
func ctxError(ctx context.Context, what string) error {
	err := ctx.Err()
	if err == nil {
		err = context.Canceled
	}
	kind := vm.KindCanceled
	msg := what + ": canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		kind, msg = vm.KindTimeout, what+": deadline exceeded"
		if cause := context.Cause(ctx); cause != nil && cause != err {
			msg = what + ": " + cause.Error()
		}
	}
	return &vm.Error{Kind: kind, Message: msg, Err: err}
}

// errorKinds are the kinds a fixture may script: every catchable kind of
// spec/language.md §12.6 a model or tool call can raise.
var errorKinds = map[vm.ErrorKind]bool{
	vm.KindTimeout:       true,
	vm.KindRateLimit:     true,
	vm.KindUnavailable:   true,
	vm.KindInvalidOutput: true,
	vm.KindModelError:    true,
	vm.KindToolError:     true,
}
