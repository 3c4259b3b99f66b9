package recall

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"The certificate serial is SN-4471-AX.", []string{"certificate", "serial", "sn-4471-ax", "sn", "4471", "ax"}},
		{"Databases and classes", []string{"database", "classe"}},
		{"class pass gas", []string{"class", "pass", "gas"}},
		{"v2.3.1 released on 2027-03-14", []string{"v2.3.1", "v2", "3", "1", "released", "2027-03-14", "2027", "03", "14"}},
		{"end. Next", []string{"end", "next"}},
		{"a b 7 x", []string{"7"}},
		{"INC/2291#note", []string{"inc/2291#note", "inc", "2291", "note"}},
		{"東京タワー", []string{"東", "京", "東京", "タ", "京タ", "ワ", "タワ"}}, // ー is not Katakana script
		{"日本語 text", []string{"日", "本", "日本", "語", "本語", "text"}},
		{"Größe ÜBER", []string{"größe", "über"}},
		{"", nil},
		{"---", nil},
	}
	for _, tc := range tests {
		if got := Terms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("x", 200)
	if got := Terms(long); len(got) != 1 || len(got[0]) != maxTermBytes {
		t.Errorf("long term: %d bytes", len(got[0]))
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in      string
		terms   []string
		clauses int
	}{
		{"certificate serial", []string{"certificate", "serial"}, 0},
		{"billing database, and the renewal date", []string{"billing", "database", "renewal", "date"}, 2},
		{`"exact phrase" or other words; third`, []string{"exact", "phrase", "other", "word", "third"}, 3},
		{"what is it?", nil, 0},
		{"a, b, c, d, e, f", nil, 0},
		{"one, two, three, four, five, six", []string{"one", "two", "three", "four", "five", "six"}, maxClauses},
	}
	for _, tc := range tests {
		q := parseQuery(tc.in)
		if !slices.Equal(q.terms, tc.terms) || len(q.clauses) != tc.clauses {
			t.Errorf("parseQuery(%q) = %q / %d clauses, want %q / %d", tc.in, q.terms, len(q.clauses), tc.terms, tc.clauses)
		}
	}
	q := parseQuery(strings.Repeat("word", 100) + " " + strings.Repeat("z ", 2000))
	if len(q.terms) > maxQueryTerm {
		t.Errorf("%d terms", len(q.terms))
	}
}

func TestRank(t *testing.T) {
	docs := []Doc{
		{"a", "The user prefers metric units."},
		{"b", "The user lives in Lisbon and works on billing."},
		{"c", "Serial SN-1 belongs to the staging host."},
		{"d", "Unrelated note about lunch."},
	}
	got := Rank("which units does the user prefer", docs, 2, 0)
	if len(got) == 0 || got[0].Key != "a" {
		t.Fatalf("Rank = %+v", got)
	}
	if got := Rank("SN-1", docs, 0, 0); len(got) != 1 || got[0].Key != "c" || got[0].Score < 0.8 {
		t.Errorf("exact id: %+v", got)
	}
	if got := Rank("kubernetes", docs, 0, 0); len(got) != 0 {
		t.Errorf("no match: %+v", got)
	}
	if got := Rank("units", append(docs, Doc{"a", "now about lunch"}), 0, 0); len(got) != 0 {
		t.Errorf("a repeated key replaces the document: %+v", got)
	}
	if got := Rank("metric units", docs, 0, 0.7); len(got) != 1 {
		t.Errorf("min score: %+v", got)
	}
}

func FuzzTermsAndQuery(f *testing.F) {
	for _, s := range []string{"SN-4471-AX", "billing, and renewal", "東京タワー", "a-b-c-", "x\x00y", "\xff\xfe", "\"q\" or w; e", "v2.3.1/x#y:z_w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range Terms(s) {
			if term == "" || len(term) > maxTermBytes || term != strings.ToLower(term) && utf8.ValidString(term) {
				t.Fatalf("bad term %q of %q", term, s)
			}
		}
		q := parseQuery(s)
		if len(q.terms) > maxQueryTerm || len(q.clauses) > maxClauses || len(q.clauses) == 1 {
			t.Fatalf("query %+v", q)
		}
		_ = snippet(s, q.terms)
		if sn := snippet(s, q.terms); len(sn) > snippetLen+2*len("…") {
			t.Fatalf("snippet of %d bytes", len(sn))
		}
		_ = Rank(s, []Doc{{"x", s}, {"y", "other"}}, 3, 0)
	})
}
