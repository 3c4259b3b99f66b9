package compiler

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Regression tests for the compiler bugs of issue 18 (found by writing
// workflows from the spec): each source gives exactly the diagnostics
// listed, as "CODE substring", in order.
func TestIssue18Regressions(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "set node writes count for definite assignment",
			src: `state S { q: string, a: string, out: string = "" }
graph g(S) input q output out {
  node wa  = set { a = "A" }
  node use = set { out = a }
  start -> wa
  wa -> use
  use -> end
}
`,
		},
		{
			name: "a set node that writes null does not assign",
			src: `state S { q: string, a: string?, out: string = "" }
graph g(S) input q output out {
  node wa  = set { a = null }
  node use = set { out = a.x }
  start -> wa
  wa -> use
  use -> end
}
`,
			want: []string{"T306 a is optional and may be unset"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ds := checkFile(fstest.MapFS{"main.agent": {Data: []byte(tc.src)}}, "main.agent")
			var got []string
			for _, d := range ds {
				got = append(got, string(d.Code)+" "+d.Summary)
			}
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], strings.SplitN(tc.want[i], " ", 2)[0]+" ") && strings.Contains(got[i], strings.SplitN(tc.want[i], " ", 2)[1])
			}
			if !ok {
				t.Errorf("diagnostics:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}
