package skillmd

import (
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	src := "---\nname: cert-diagnostics\ndescription: |\n  Reads TLS chains.\nversion: \"1.2\"\ntags: [tls, incident]\ntools: [cert_scan]\nshell: [sh, -c]\nwhen_to_use: A handshake fails.\n---\n# Steps\n1. Scan.\n"
	f, probs := Parse("s/SKILL.md", []byte(src))
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	fr := f.Front
	if fr.Name != "cert-diagnostics" || fr.Description != "Reads TLS chains." || fr.Version != "1.2" ||
		strings.Join(fr.Tags, ",") != "tls,incident" || strings.Join(fr.Tools, ",") != "cert_scan" ||
		strings.Join(fr.Shell, " ") != "sh -c" || fr.WhenToUse != "A handshake fails." {
		t.Errorf("front = %+v", fr)
	}
	if f.Body != "# Steps\n1. Scan.\n" {
		t.Errorf("body = %q", f.Body)
	}
	// Render and parse again: the same front matter and body.
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	g, probs := Parse("s/SKILL.md", out)
	if len(probs) > 0 || g.Front.Name != fr.Name || g.Body != f.Body || strings.Join(g.Front.Tags, ",") != "tls,incident" {
		t.Errorf("round trip: %+v %v\n%s", g, probs, out)
	}
}

func TestParseProblemsHavePositions(t *testing.T) {
	cases := []struct {
		src, want string // want: "line:col: message fragment"
	}{
		{"---\nname: Bad\ndescription: d\n---\n", "2:7: name \"Bad\""},
		{"---\nname: ok\ndescription: d\ntags: 3\n---\n", "4:7: tags must be a list"},
		{"---\nname: ok\ndescription: d\ncolour: red\n---\n", "4:1: unknown front-matter key \"colour\""},
		{"---\nname: ok\n---\n", "1:1: the front matter has no description"},
		{"---\nname: ok\ndescription: [unclosed\n---\n", "front matter:"},
		{"# no front matter\n", "1:1: SKILL.md must start with a front matter"},
		{"---\nname: ok\ndescription: d\n", "1:1: the front matter is not closed"},
		{"---\nname: ok\nname: again\ndescription: d\n---\n", "3:1: front-matter key \"name\" is repeated"},
		{"---\nname: ok\ndescription: d\ntools: [a, {x: 1}]\n---\n", "4:12: tools must be a list of non-empty strings"},
	}
	for _, c := range cases {
		_, probs := Parse("x/SKILL.md", []byte(c.src))
		found := false
		for _, p := range probs {
			if strings.Contains(p.Error(), "x/SKILL.md:"+c.want) || (strings.HasPrefix(c.want, "front") && strings.Contains(p.Msg, c.want)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: problems %v, want %q", c.src, probs, c.want)
		}
	}
}

func TestPositionCountsRunes(t *testing.T) {
	src := "---\ndescription: «d»\nname: Ünïcode\n---\n"
	_, probs := Parse("f", []byte(src))
	if len(probs) != 1 || probs[0].Span.Start.Line != 3 || probs[0].Span.Start.Col != 7 ||
		probs[0].Span.Start.Offset != strings.Index(src, "Ünïcode") {
		t.Fatalf("problems %+v", probs)
	}
}
