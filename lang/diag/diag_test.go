package diag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	sarif "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

func sample() ([]Diagnostic, Sources) {
	text := "workflow w\n\nstate S {\n  a : strng\n}\n\tnode x = set { a = @ }\n"
	src := []byte(text)
	strng, at := strings.Index(text, "strng"), strings.Index(text, "@")
	ds := []Diagnostic{
		{Severity: Error, Code: UnknownName, Summary: `unknown type "strng"`, Detail: "did you mean string?",
			Subject: Span{File: "a.agent", Start: Pos{Offset: strng, Line: 4, Col: 7}, End: Pos{Offset: strng + 5, Line: 4, Col: 12}}},
		{Severity: Warning, Code: UnusedDecl, Summary: `state "S" is never used`,
			Subject: Span{File: "a.agent", Start: Pos{Offset: 18, Line: 3, Col: 7}, End: Pos{Offset: 19, Line: 3, Col: 8}},
			Related: []Related{{Message: "declared here", Span: Span{File: "a.agent", Start: Pos{Offset: 12, Line: 3, Col: 1}, End: Pos{Offset: 17, Line: 3, Col: 6}}}}},
		{Severity: Error, Code: SyntaxError, Summary: `unexpected "@"`,
			Subject: Span{File: "a.agent", Start: Pos{Offset: at, Line: 6, Col: 21}, End: Pos{Offset: at + 1, Line: 6, Col: 22}}},
	}
	return ds, Sources{"a.agent": src}
}

func TestSortedDeduplicates(t *testing.T) {
	ds, _ := sample()
	var l List
	l.Append(ds...)
	l.Append(ds[0])
	got := l.Sorted()
	if len(got) != 3 {
		t.Fatalf("got %d, want 3 after de-duplication", len(got))
	}
	if got[0].Code != UnusedDecl || got[1].Code != UnknownName || got[2].Code != SyntaxError {
		t.Errorf("order: %v %v %v", got[0].Code, got[1].Code, got[2].Code)
	}
	if e, w := CountErrors(got); e != 2 || w != 1 {
		t.Errorf("counts %d %d", e, w)
	}
	if !l.HasErrors() {
		t.Error("HasErrors = false")
	}
}

func TestWriteText(t *testing.T) {
	ds, srcs := sample()
	var b bytes.Buffer
	if err := WriteText(&b, ds, srcs); err != nil {
		t.Fatal(err)
	}
	want := "a.agent:4:7: error N201: unknown type \"strng\"\n" +
		"   4 |   a : strng\n" +
		"     |       ^^^^^\n" +
		"  did you mean string?\n" +
		"a.agent:3:7: warning N205: state \"S\" is never used\n" +
		"   3 | state S {\n" +
		"     |       ^\n" +
		"  a.agent:3:1: declared here\n" +
		"a.agent:6:21: error S101: unexpected \"@\"\n" +
		"   6 | \tnode x = set { a = @ }\n" +
		"     | \t                   ^\n"
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteJSON(t *testing.T) {
	ds, _ := sample()
	var b bytes.Buffer
	if err := WriteJSON(&b, ds); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version     int
		Errors      int
		Warnings    int
		Diagnostics []struct {
			Severity string
			Code     string
			Span     struct {
				File  string
				Start struct{ Line, Column, Offset int }
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Diagnostics[0]
	if doc.Version != 1 || doc.Errors != 2 || doc.Warnings != 1 || d.Severity != "error" || d.Code != "N201" ||
		d.Span.File != "a.agent" || d.Span.Start.Line != 4 || d.Span.Start.Column != 7 {
		t.Errorf("unexpected JSON: %s", b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || !strings.Contains(b.String(), `"diagnostics": []`) {
		t.Errorf("empty report: %s %v", b.String(), err)
	}
}

// TestWriteSARIFValidatesAgainstSchema checks the log against the official
// SARIF 2.1.0 JSON schema (embedded in go-sarif), and that every field we
// emit is a field the schema's object model knows (a round trip through
// the typed model loses nothing).
func TestWriteSARIFValidatesAgainstSchema(t *testing.T) {
	ds, _ := sample()
	var b bytes.Buffer
	if err := WriteSARIF(&b, ds, "test"); err != nil {
		t.Fatal(err)
	}
	rep, err := sarif.FromBytes(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Validate(); err != nil {
		t.Fatalf("SARIF does not validate: %v\n%s", err, b.String())
	}
	round, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var a, c any
	_ = json.Unmarshal(b.Bytes(), &a)
	_ = json.Unmarshal(round, &c)
	if path := notSubset(a, c, "$"); path != "" {
		ours, _ := json.Marshal(a)
		model, _ := json.Marshal(c)
		t.Errorf("field %s is lost by the SARIF object model", path)
		t.Errorf("round trip through the SARIF model changed the log:\nours:  %s\nmodel: %s", ours, model)
	}
	res := rep.Runs[0].Results
	if len(res) != 3 || *res[0].RuleID != "N201" || *res[0].Locations[0].PhysicalLocation.Region.StartLine != 4 ||
		*res[0].Locations[0].PhysicalLocation.Region.StartColumn != 7 {
		t.Errorf("results do not carry the positions: %s", b.String())
	}
}

// notSubset returns the path of the first value in ours that model lacks
// or holds differently ("" when ours ⊆ model; the model adds defaults).
func notSubset(ours, model any, path string) string {
	switch x := ours.(type) {
	case map[string]any:
		m, ok := model.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range x {
			if p := notSubset(v, m[k], path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		l, ok := model.([]any)
		if !ok || len(l) != len(x) {
			return path
		}
		for i := range x {
			if p := notSubset(x[i], l[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	if !reflect.DeepEqual(ours, model) {
		return path
	}
	return ""
}

func TestCodesAreUnique(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c.Code] {
			t.Errorf("duplicate code %s", c.Code)
		}
		seen[c.Code] = true
		if c.Title == "" || c.Doc == "" || c.Severity == 0 {
			t.Errorf("code %s lacks title, doc or severity", c.Code)
		}
	}
}

// TestWrite: text ends with the totals, json and sarif are their writers,
// an unknown format is an error.
func TestWrite(t *testing.T) {
	ds, srcs := sample()
	for format, want := range map[string]string{"text": "\n2 error(s), 1 warning(s)\n", "json": `"errors":2`, "sarif": `"version":"2.1.0"`} {
		var b bytes.Buffer
		if err := Write(&b, format, ds, srcs, "v1"); err != nil || !strings.Contains(strings.ReplaceAll(b.String(), `": `, `":`), want) {
			t.Errorf("%s: %v\n%s", format, err, b.String())
		}
	}
	var b bytes.Buffer
	if err := Write(&b, "text", nil, nil, ""); err != nil || b.Len() != 0 {
		t.Errorf("text of nothing: %q, %v", b.String(), err)
	}
	if err := Write(&b, "xml", ds, srcs, ""); err == nil {
		t.Error("xml: no error")
	}
}

// TestWithArticle: the article agrees with the word's first sound.
func TestWithArticle(t *testing.T) {
	for word, want := range map[string]string{
		"interrupt node": "an interrupt node", "llm agent": "an llm agent", "set node": "a set node",
		"http tool": "an http tool", "tool": "a tool", "agent": "an agent", "list<string>": "a list<string>", "int": "an int",
	} {
		if got := WithArticle(word); got != want {
			t.Errorf("WithArticle(%q) = %q, want %q", word, got, want)
		}
	}
}
