package skillmd

import "testing"

// FuzzParse: any bytes as a SKILL.md parse without a panic, and every
// problem has a message and a valid span inside the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: report\ndescription: Writes a report.\n---\n# Report\n1. Run it.\n"))
	f.Add([]byte("---\nname: [\n---\n"))
	f.Add([]byte("---\ntags: 3\nversion: {a: 1}\n"))
	f.Add([]byte("no front matter at all"))
	f.Add([]byte("---\n\xbd\xbd: \xff\n---\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, probs := Parse("SKILL.md", src)
		for _, p := range probs {
			if p.Msg == "" {
				t.Errorf("a problem without a message at %v", p.Span)
			}
			if p.Span.File != "SKILL.md" || !p.Span.IsValid() || p.Span.Start.Offset > len(src) || p.Span.End.Offset > len(src) ||
				p.Span.Start.Offset > p.Span.End.Offset {
				t.Errorf("problem %q has span %+v (file of %d bytes)", p.Msg, p.Span, len(src))
			}
		}
	})
}
