package runtime

import "context"

// RunToEnd is Run for a caller that reads the stream to its end however
// the run stops (agentc run): when ctx is done the run is canceled through
// Cancel rather than abandoned, so the stream still ends with run_finished
// (status canceled). The forwarding goroutine ends when the run's stream
// closes.
func (r *Runner) RunToEnd(ctx context.Context, inv Invocation) (<-chan *Event, error) {
	ch, err := r.Run(context.WithoutCancel(ctx), inv)
	if err != nil {
		return nil, err
	}
	out := make(chan *Event, cap(ch))
	go func() {
		defer close(out)
		stop := func() bool { return false }
		defer func() { stop() }()
		watch := ctx
		for e := range ch {
			if e.Run != "" && watch != nil {
				run := e.Run
				stop = context.AfterFunc(watch, func() { r.Cancel(run) })
				watch = nil // one registration: the first event names the run
			}
			out <- e
		}
	}()
	return out, nil
}
