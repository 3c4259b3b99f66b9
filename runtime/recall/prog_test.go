package recall

import (
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/runtimetest"
)

// programWithRecall compiles a program whose only agent, helper, has a
// recall policy with the given attributes.
func programWithRecall(t testing.TB, attrs string) *bytecode.Program {
	t.Helper()
	src := `workflow w "recall test"
model fast { provider = openai, name = "gpt-4o-mini" }
recall past {
  ` + attrs + `
}
agent helper llm "helps" {
  model  = fast
  tools  = [session_search, session_load]
  recall = past
}
`
	return compile(t, src)
}

func compile(t testing.TB, src string) *bytecode.Program {
	t.Helper()
	return runtimetest.Compile(t, fstest.MapFS{"w.agent": {Data: []byte(src)}}, "w.agent")
}
