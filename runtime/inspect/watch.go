package inspect

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentc/agentc/runtime"
)

// Watch is how a person follows a run from a terminal (agentc run): what
// it prints of each event, and how the run ended.
type Watch struct {
	// Out gets the JSON lines of JSON, Err the progress lines and the
	// notes, a run error's line and a note prefixed with Prefix.
	Out, Err io.Writer
	// JSON prints every event as one JSON line on Out instead of progress.
	JSON   bool
	Prefix string
}

// Follow reads ch to its end, printing each event (Progress lines on clock
// now, or JSON lines), and returns the run's run_finished event, nil when
// the channel closed without one.
func (w Watch) Follow(ch <-chan *runtime.Event, now func() time.Time) *runtime.Event {
	progress := NewProgress(now)
	var fin *runtime.Event
	for e := range ch {
		if e.Kind == runtime.EventRunFinished {
			fin = e
		}
		if w.JSON {
			if err := w.Event(e); err != nil {
				fmt.Fprintf(w.Err, "%s%v\n", w.Prefix, err)
			}
		} else if line := progress.Line(e); line != "" && e.Kind == runtime.EventRunError {
			fmt.Fprintf(w.Err, "%s%s\n", w.Prefix, line)
		} else if line != "" {
			fmt.Fprintln(w.Err, line)
		}
	}
	return fin
}

// Event prints e as one JSON line on Out (runtime.EncodeEvent).
func (w Watch) Event(e *runtime.Event) error {
	b, err := runtime.EncodeEvent(e)
	if err != nil {
		return err
	}
	fmt.Fprintf(w.Out, "%s\n", b)
	return nil
}

// Ending is how a run a person started ended, as far as they act on it.
type Ending int

const (
	// Completed: the run finished its work.
	Completed Ending = iota
	// Waiting: the run waits on an interrupt or a decision (resume it).
	Waiting
	// Canceled: the run, or the watch of it, was canceled.
	Canceled
	// Failed: the run failed, or its events ended without run_finished.
	Failed
)

// End is how the run whose run_finished event is fin ended (fin nil: the
// events ended without one, canceled when the watcher was), with the error
// that says so for Canceled and Failed.
func End(fin *runtime.Event, canceled bool) (Ending, error) {
	switch {
	case fin == nil && canceled:
		return Canceled, errors.New("canceled")
	case fin == nil:
		return Failed, errors.New("the run ended without run_finished")
	case fin.Status == runtime.StatusCompleted:
		return Completed, nil
	case fin.Status == runtime.StatusInterrupted || fin.Status == runtime.StatusNeedsDecision:
		return Waiting, nil
	case fin.Status == runtime.StatusCanceled:
		return Canceled, fmt.Errorf("run %s canceled", fin.Run)
	case fin.Error != nil:
		return Failed, fmt.Errorf("run %s failed: %s: %s", fin.Run, fin.Error.Kind, fin.Error.Message)
	}
	return Failed, fmt.Errorf("run %s failed", fin.Run)
}
