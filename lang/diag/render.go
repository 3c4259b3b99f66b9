package diag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Sources maps a file name (as it appears in spans) to its text, for
// snippets. A missing file renders without a snippet.
type Sources map[string][]byte

// WriteText renders diagnostics as
//
//	file:line:col: error S101: summary
//	   3 | node a = set { x = }
//	     |                    ^
//	  detail
//	  file:line:col: related message
//
// followed by nothing else; the caller prints any totals.
func WriteText(w io.Writer, ds []Diagnostic, src Sources) error {
	var b bytes.Buffer
	for _, d := range ds {
		fmt.Fprintf(&b, "%s: %s %s: %s\n", d.Subject, d.Severity, d.Code, d.Summary)
		writeSnippet(&b, d.Subject, src[d.Subject.File])
		if d.Detail != "" {
			for _, line := range strings.Split(d.Detail, "\n") {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		for _, r := range d.Related {
			fmt.Fprintf(&b, "  %s: %s\n", r.Span, r.Message)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeSnippet prints the subject's first line with a caret run under the
// span (clipped to that line). Tabs are kept so the caret lines up.
func writeSnippet(b *bytes.Buffer, s Span, text []byte) {
	if !s.IsValid() || text == nil || s.Start.Offset > len(text) {
		return
	}
	lineStart := bytes.LastIndexByte(text[:s.Start.Offset], '\n') + 1
	lineEnd := bytes.IndexByte(text[s.Start.Offset:], '\n')
	if lineEnd < 0 {
		lineEnd = len(text)
	} else {
		lineEnd += s.Start.Offset
	}
	line := strings.TrimRight(string(text[lineStart:lineEnd]), "\r")
	const maxLine = 200
	if utf8.RuneCountInString(line) > maxLine {
		return // minified or generated text: the position is enough
	}
	gutter := fmt.Sprintf("%4d | ", s.Start.Line)
	fmt.Fprintf(b, "%s%s\n", gutter, line)
	var pad strings.Builder
	for _, r := range string(text[lineStart:s.Start.Offset]) {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	end := s.End.Offset
	if end > lineEnd || s.End.Line != s.Start.Line {
		end = lineEnd
	}
	n := utf8.RuneCount(text[s.Start.Offset:max(end, s.Start.Offset)])
	if n < 1 {
		n = 1
	}
	fmt.Fprintf(b, "%s| %s%s\n", strings.Repeat(" ", len(gutter)-2), pad.String(), strings.Repeat("^", n))
}

// jsonReport is the --format json document: a version, the diagnostics,
// and totals. Field names are part of the CLI contract.
type jsonReport struct {
	Version     int          `json:"version"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	Errors      int          `json:"errors"`
	Warnings    int          `json:"warnings"`
}

// WriteJSON renders {"version":1,"diagnostics":[...],"errors":N,"warnings":M}.
func WriteJSON(w io.Writer, ds []Diagnostic) error {
	if ds == nil {
		ds = []Diagnostic{}
	}
	e, wn := CountErrors(ds)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Version: 1, Diagnostics: ds, Errors: e, Warnings: wn})
}

// SARIF 2.1.0 subset: one run, one tool with every registered rule, one
// result per diagnostic with a physical location (1-based line/column,
// columns in UTF-16 code units are not needed: we declare
// columnKind "unicodeCodePoints").
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool             sarifTool     `json:"tool"`
	Results          []sarifResult `json:"results"`
	Language         string        `json:"language"`
	NewlineSequences []string      `json:"newlineSequences"`
	ColumnKind       string        `json:"columnKind"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Language       string      `json:"language"`
	InformationURI string      `json:"informationUri,omitempty"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifMessage   `json:"shortDescription"`
	FullDescription      sarifMessage   `json:"fullDescription"`
	DefaultConfiguration sarifRuleLevel `json:"defaultConfiguration"`
}

type sarifRuleLevel struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID           string            `json:"ruleId"`
	RuleIndex        int               `json:"ruleIndex"`
	Level            string            `json:"level"`
	Message          sarifMessage      `json:"message"`
	Locations        []sarifLocation   `json:"locations"`
	RelatedLocations []sarifRelatedLoc `json:"relatedLocations,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifRelatedLoc struct {
	ID               int           `json:"id"`
	Message          sarifMessage  `json:"message"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn"`
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

func sarifPhys(s Span) sarifPhysical {
	p := sarifPhysical{ArtifactLocation: sarifArtifact{URI: s.File}}
	if s.IsValid() {
		end := s.End
		if !end.IsValid() || end.Offset < s.Start.Offset {
			end = s.Start
		}
		p.Region = &sarifRegion{StartLine: s.Start.Line, StartColumn: s.Start.Col, EndLine: end.Line, EndColumn: max(end.Col, 1)}
	}
	return p
}

// WriteSARIF renders a SARIF 2.1.0 log for code-scanning tools.
func WriteSARIF(w io.Writer, ds []Diagnostic, toolVersion string) error {
	codes := Codes()
	index := make(map[Code]int, len(codes))
	rules := make([]sarifRule, 0, len(codes))
	for i, c := range codes {
		index[c.Code] = i
		rules = append(rules, sarifRule{
			ID: string(c.Code), Name: ruleName(c.Title),
			ShortDescription:     sarifMessage{Text: c.Title},
			FullDescription:      sarifMessage{Text: c.Doc},
			DefaultConfiguration: sarifRuleLevel{Level: sarifLevel(c.Severity)},
		})
	}
	results := make([]sarifResult, 0, len(ds))
	for _, d := range ds {
		ri, ok := index[d.Code]
		if !ok {
			ri = len(rules)
			index[d.Code] = ri
			rules = append(rules, sarifRule{ID: string(d.Code), Name: string(d.Code),
				ShortDescription: sarifMessage{Text: string(d.Code)}, FullDescription: sarifMessage{Text: string(d.Code)},
				DefaultConfiguration: sarifRuleLevel{Level: sarifLevel(d.Severity)}})
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "\n" + d.Detail
		}
		r := sarifResult{RuleID: string(d.Code), RuleIndex: ri, Level: sarifLevel(d.Severity),
			Message: sarifMessage{Text: msg}, Locations: []sarifLocation{{PhysicalLocation: sarifPhys(d.Subject)}}}
		for i, rel := range d.Related {
			r.RelatedLocations = append(r.RelatedLocations, sarifRelatedLoc{ID: i + 1, Message: sarifMessage{Text: rel.Message}, PhysicalLocation: sarifPhys(rel.Span)})
		}
		results = append(results, r)
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool:             sarifTool{Driver: sarifDriver{Name: "agentc", Language: "en-US", Version: toolVersion, Rules: rules}},
			Results:          results,
			Language:         "en-US",
			NewlineSequences: []string{"\r\n", "\n"},
			ColumnKind:       "unicodeCodePoints",
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// ruleName turns "unknown name" into "UnknownName" (SARIF rule names are
// conventionally PascalCase identifiers).
func ruleName(title string) string {
	var b strings.Builder
	for _, w := range strings.Fields(title) {
		r, size := utf8.DecodeRuneInString(w)
		b.WriteString(strings.ToUpper(string(r)))
		b.WriteString(w[size:])
	}
	return strings.NewReplacer("-", "", "'", "").Replace(b.String())
}

// Write renders ds in format: "text" (WriteText, then a line with the
// totals, "N error(s), M warning(s)", when there is any diagnostic),
// "json" (WriteJSON) or "sarif" (WriteSARIF, naming toolVersion). Any
// other format is an error.
func Write(w io.Writer, format string, ds []Diagnostic, src Sources, toolVersion string) error {
	switch format {
	case "json":
		return WriteJSON(w, ds)
	case "sarif":
		return WriteSARIF(w, ds, toolVersion)
	case "text":
		if err := WriteText(w, ds, src); err != nil {
			return err
		}
		if e, warn := CountErrors(ds); e+warn > 0 {
			_, err := fmt.Fprintf(w, "%d error(s), %d warning(s)\n", e, warn)
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown format %q (want text, json or sarif)", format)
}
