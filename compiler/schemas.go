package compiler

// AttrDoc describes one attribute a block accepts, for editors
// (completion and hover in the language server).
type AttrDoc struct {
	Name     string
	Doc      string
	Required bool
	// Words are the accepted words of a symbol attribute (provider =
	// openai), empty for other kinds.
	Words []string
}

// blockSchemas are every attribute table, by the block kind they describe.
var blockSchemas = []*blockSchema{
	modelSchema, priceSchema, budgetSchema, summarySchema, compactionSchema, recallSchema, memorySchema, evolutionSchema,
	llmAgentSchema, chainSchema, parallelSchema, cycleSchema, a2aSchema, openaiSchema, mcpSchema, serveSchema,
	httpSchema, execSchema, mcpToolSchema, toolSchema, skillSchema, llmNodeSchema, agentNodeSchema, testSchema,
}

// BlockAttrs returns the attributes of a block kind, in table order: one of
// "model", "price", "budget", "summary", "compaction", "recall", "memory", "evolution",
// "llm agent", "chain agent", "parallel agent", "cycle agent", "a2a",
// "openai", "mcp" (the serve block's), "serve", "http", "exec", "mcp tool",
// "tool", "skill", "llm node",
// "agent node" and "test". An unknown kind has none.
func BlockAttrs(kind string) []AttrDoc {
	for _, s := range blockSchemas {
		if s.what != kind {
			continue
		}
		out := make([]AttrDoc, len(s.attrs))
		for i, a := range s.attrs {
			out[i] = AttrDoc{Name: a.name, Doc: a.doc, Required: a.required}
			if a.kind == vWord || a.kind == vWords {
				out[i].Words = append([]string(nil), a.words...)
			}
		}
		return out
	}
	return nil
}
