// Package proc runs one command in a process group of its own: it feeds
// its standard input, copies its output to the caller's writers, and kills
// the whole group when the command exits (so forked children do not
// outlive it), when the context ends, and when an output overflows. It is
// the one process runner of workspace commands and declared exec tools;
// what the command may reach is package jail's business.
package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// ErrOverflow, returned by an output writer, ends the command: its output
// went over what the caller accepts. The rest of that output is read and
// dropped until the group is gone.
var ErrOverflow = errors.New("proc: output over its cap")

// Stop says why a command stopped.
type Stop int

// Stops.
const (
	Exited      Stop = iota // on its own (Run's wait error says how)
	Interrupted             // the context ended (its error says how)
	Overflowed              // an output writer returned ErrOverflow
)

// drainWait bounds how long the pipes may stay open once the process group
// is gone (a descendant that left the group may hold them).
const drainWait = time.Second

// Run starts cmd, whose Stdin, Stdout and Stderr must be unset, in a
// process group of its own (SysProcAttr.Setpgid; on Windows, where there
// is none, only the command itself is killed), writes stdin to it (none:
// it reads end of file), copies its standard output to stdout and its
// standard error to stderr, and waits for it. err is why the command could
// not start (cmd.Err, a failed pipe, Start's error); otherwise stop says
// why it stopped and waitErr is cmd.Wait's error (an *exec.ExitError for a
// non-zero exit or a signal). Every goroutine Run starts has ended when it
// returns, and so has every process of the command's group.
func Run(ctx context.Context, cmd *exec.Cmd, stdin []byte, stdout, stderr io.Writer) (stop Stop, waitErr, err error) {
	if cmd.Err != nil {
		return Exited, nil, cmd.Err
	}
	ownGroup(cmd)

	var files []*os.File // every pipe end this call opened
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	defer closeAll()
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return Exited, nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return Exited, nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if len(stdin) > 0 {
		inR, w, err := pipe()
		if err != nil {
			return Exited, nil, err
		}
		cmd.Stdin, inW = inR, w
	}
	if err := cmd.Start(); err != nil {
		return Exited, nil, err
	}
	// The child holds its own ends now.
	outW.Close()
	errW.Close()
	if f, ok := cmd.Stdin.(*os.File); ok {
		f.Close()
	}
	pid := cmd.Process.Pid
	killGroup := func() { kill(pid) }

	var (
		wg       sync.WaitGroup
		overflow = make(chan struct{})
		once     sync.Once
	)
	overflowed := func() { once.Do(func() { close(overflow) }) }
	wg.Go(func() { pump(outR, stdout, overflowed) })
	wg.Go(func() { pump(errR, stderr, overflowed) })
	if inW != nil {
		wg.Go(func() {
			_, _ = inW.Write(stdin)
			inW.Close()
		})
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }() // owned: Run receives from it below

	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		killGroup()
		waitErr, stop = <-waited, Interrupted
	case <-overflow:
		killGroup()
		waitErr, stop = <-waited, Overflowed
	}
	killGroup() // descendants left in the group
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainWait):
		// A descendant outside the group still holds a pipe: closing our
		// ends unblocks the readers and the writer.
		closeAll()
		<-drained
	}
	return stop, waitErr, nil
}

// pump copies r to w until r ends; after w fails it reads and drops the
// rest, calling overflowed once w returned ErrOverflow.
func pump(r io.Reader, w io.Writer, overflowed func()) {
	buf := make([]byte, 32<<10)
	failed := false
	for {
		n, err := r.Read(buf)
		if n > 0 && !failed {
			if _, werr := w.Write(buf[:n]); werr != nil {
				failed = true
				if errors.Is(werr, ErrOverflow) {
					overflowed()
				}
			}
		}
		if err != nil {
			return
		}
	}
}
