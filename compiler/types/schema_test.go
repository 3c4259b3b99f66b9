package types

import (
	"encoding/json"
	"regexp"
	"testing"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONSchema(t *testing.T) {
	tool := mustRec(t, "", Field{Name: "host", Type: StringType},
		Field{Name: "port", Type: IntType, HasDefault: true, Default: MakeInt(443)},
		Field{Name: "note", Type: OptionalOf(StringType)})
	for _, tc := range []struct {
		typ          *Type
		want, strict string
	}{
		{triage(t),
			`{"additionalProperties":false,"properties":{"hosts":{"items":{"type":"string"},"type":"array"},"verdict":{"enum":["certificate","network","other"],"type":"string"}},"required":["verdict","hosts"],"type":"object"}`,
			""},
		{tool,
			`{"additionalProperties":false,"properties":{"host":{"type":"string"},"note":{"anyOf":[{"type":"string"},{"type":"null"}]},"port":{"default":443,"type":"integer"}},"required":["host"],"type":"object"}`,
			`{"additionalProperties":false,"properties":{"host":{"type":"string"},"note":{"anyOf":[{"type":"string"},{"type":"null"}]},"port":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["host","port","note"],"type":"object"}`},
		{MapOf(FloatType), `{"additionalProperties":{"type":"number"},"type":"object"}`, ""},
		{DurationType, `{"pattern":"^-?(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$","type":"string"}`, ""},
		{JSONType, `{}`, ""},
		{OptionalOf(BoolType), `{"anyOf":[{"type":"boolean"},{"type":"null"}]}`, ""},
		{mustRec(t, ""), `{"additionalProperties":false,"properties":{},"type":"object"}`,
			`{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
		{MessagesType, `{"items":{"additionalProperties":false,"properties":{"content":{"type":"string"},"name":{"anyOf":[{"type":"string"},{"type":"null"}]},"role":{"type":"string"},"tool_call_id":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["role","content"],"type":"object"},"type":"array"}`, ""},
	} {
		if got := marshal(t, JSONSchema(tc.typ)); got != tc.want {
			t.Errorf("JSONSchema(%s) =\n %s\nwant\n %s", tc.typ, got, tc.want)
		}
		if tc.strict != "" {
			if got := marshal(t, StrictJSONSchema(tc.typ)); got != tc.strict {
				t.Errorf("StrictJSONSchema(%s) =\n %s\nwant\n %s", tc.typ, got, tc.strict)
			}
		}
	}
	re := regexp.MustCompile(DurationPattern)
	for _, s := range []string{"200ms", "1m30s", "0s", "0", "1.5h", "-3s", "2µs"} {
		if !re.MatchString(s) {
			t.Errorf("pattern rejects %q", s)
		}
	}
	for _, s := range []string{"", "5", "1x", "ms"} {
		if re.MatchString(s) {
			t.Errorf("pattern accepts %q", s)
		}
	}
}
