package main

// The workflows the figures run, as .agent source compiled in memory.

import (
	"fmt"
	"strings"
)

// chainSource: n set nodes in a row, each incrementing one int.
func chainSource(n int) string {
	var b strings.Builder
	b.WriteString("workflow chain \"A chain of no-op steps\"\n\nstate S { q: string, n: int = 0 }\n\ngraph chain(S) input q output n {\n")
	for i := range n {
		fmt.Fprintf(&b, "  node s%d = set { n = n + 1 }\n", i)
	}
	b.WriteString("  start -> s0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  s%d -> s%d\n", i-1, i)
	}
	fmt.Fprintf(&b, "  s%d -> end\n}\n", n-1)
	return b.String()
}

// fanSource: blocks of 8 parallel tool nodes joined by a join all; with
// into, every result is appended to one list field.
func fanSource(blocks int, into bool) string {
	var b strings.Builder
	b.WriteString("workflow fan \"Fan-out and join\"\n\n")
	b.WriteString("tool noop \"Does nothing\" { input { q: string } output string run = builtin.now effect = read_only }\n\n")
	b.WriteString("state S { q: string, hits: list<string> = [] reduce append }\n\ngraph fan(S) input q output hits {\n")
	var edges []string
	prev := "start"
	for k := range blocks {
		j := fmt.Sprintf("j%d", k)
		for i := range 8 {
			n := fmt.Sprintf("b%dn%d", k, i)
			if into {
				fmt.Fprintf(&b, "  node %s = tool noop { q = q } into hits\n", n)
			} else {
				fmt.Fprintf(&b, "  node %s = tool noop { q = q }\n", n)
			}
			edges = append(edges, prev+" -> "+n, n+" -> "+j)
		}
		fmt.Fprintf(&b, "  node %s = join all\n", j)
		prev = j
	}
	edges = append(edges, prev+" -> end")
	for _, e := range edges {
		b.WriteString("  " + e + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// heavyMessage is the i-th message: 200 bytes of content.
func heavyMessage(i int) string {
	return fmt.Sprintf("%04d", i) + strings.Repeat("m", 196)
}

// heavySource: a 10 KiB string field and 200 messages; each of n set nodes
// appends one 200-byte message.
func heavySource(n int) string {
	var b strings.Builder
	b.WriteString("workflow heavy \"Heavy state\"\n\ntype Msg { role: string, content: string }\n\n")
	fmt.Fprintf(&b, "state S {\n  q   : string\n  doc : string = %q\n  log : list<Msg> = [", strings.Repeat("d", 10<<10))
	for i := range 200 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{ role: \"user\", content: %q }", heavyMessage(i))
	}
	b.WriteString("] reduce append\n}\n\ngraph heavy(S) input q output q {\n")
	for i := range n {
		fmt.Fprintf(&b, "  node say%d = set { log = { role: \"user\", content: %q } }\n", i, heavyMessage(1000+i))
	}
	b.WriteString("  start -> say0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  say%d -> say%d\n", i-1, i)
	}
	fmt.Fprintf(&b, "  say%d -> end\n}\n", n-1)
	return b.String()
}

// parkSource stops at an interrupt between two set nodes.
const parkSource = `workflow park "Waits for an approval"

state S {
  q        : string
  report   : string = ""
  approved : bool = false
  log      : list<string> = [] reduce append
}

graph park(S) input q output log {
  node draft   = set { report = "a short report on {q}", log = "drafted" }
  node approve = interrupt "Publish {report}?" returns bool into approved
  node publish = set { log = "published" }
  start   -> draft
  draft   -> approve
  approve -> publish
  publish -> end
}
`
