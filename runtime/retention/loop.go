package retention

import (
	"context"
	"time"
)

// Loop plans and applies p to app now and then every interval until ctx
// ends, and hands each pass's result to report (its error is the plan's or
// the apply's). The caller owns the goroutine that runs it.
func (r *Retainer) Loop(ctx context.Context, app string, p Policy, interval time.Duration, report func(Result, error)) {
	if interval <= 0 {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pl, err := r.Plan(ctx, app, p)
		var res Result
		if err == nil {
			res, err = r.Apply(ctx, pl)
		}
		if ctx.Err() != nil {
			return
		}
		report(res, err)
		t.Reset(interval)
	}
}
