package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentc/agentc/lang/diag"
)

// Mode is what a formatting pass (agentc fmt) does with a file's canonical
// form.
type Mode int

const (
	// ModePrint writes the canonical form.
	ModePrint Mode = iota
	// ModeCheck names the file when it is not canonical (ErrNotCanonical).
	ModeCheck
	// ModeDiff writes a unified diff from the file to its canonical form.
	ModeDiff
	// ModeWrite rewrites the file, keeping its permissions.
	ModeWrite
)

var (
	// ErrSyntax is a file with syntax errors: it is left untouched.
	ErrSyntax = errors.New("format: syntax errors")
	// ErrNotCanonical is a file ModeCheck found not in canonical form.
	ErrNotCanonical = errors.New("format: not canonical")
)

// Apply formats src, the text of file name, under m. What it prints goes
// to out (the canonical form, a diff, or the name of a file ModeCheck finds
// differing); the diagnostics of a file with syntax errors go to diags as
// text (ErrSyntax), and note gets why a file differs when the reason is
// invisible (Why). Any other error is the file's or a stream's I/O.
func Apply(m Mode, name string, src []byte, out, diags io.Writer, note func(string)) error {
	formatted, ds := Bytes(name, src)
	if len(ds) > 0 {
		if err := diag.WriteText(diags, ds, diag.Sources{name: src}); err != nil {
			return err
		}
		return ErrSyntax
	}
	changed := !bytes.Equal(formatted, src)
	switch {
	case m == ModePrint:
		_, err := out.Write(formatted)
		return err
	case !changed:
		return nil
	case m == ModeCheck:
		fmt.Fprintln(out, name)
		if why := Why(src); why != "" {
			note(fmt.Sprintf("%s: %s (agentc fmt -w converts them)", name, why))
		}
		return ErrNotCanonical
	case m == ModeDiff:
		text, err := Diff(name, src, formatted)
		if err != nil {
			return err
		}
		fmt.Fprint(out, text)
		return nil
	}
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(name, formatted, info.Mode().Perm()); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
