// Package vm executes verified agentc bytecode: an expression machine (one
// dispatch loop over the opcode table, machine.go) and a superstep scheduler
// for state graphs (scheduler.go) with per-node policies (policy.go),
// reducers (reduce.go), durable checkpoints (checkpoint.go, resume.go) and a
// replay journal (journal.go). It does no I/O: models, tools, sub-graphs,
// time, randomness, caches and storage are interfaces (host.go,
// checkpoint.go). spec/vm.md records the semantics and the record formats.
package vm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// ErrorField is the name of the hidden state field a catch route's error
// record is written to. The compiler adds `$error: error?` to the state of a
// graph with catch routes and lowers the implicit `error` variable of a
// catch target to LOAD of that field; `$` keeps it out of the user's names.
const ErrorField = "$error"

// Machine is a loaded program: verified, its functions bound, and the
// tables the scheduler needs precomputed. A Machine is immutable and safe
// for concurrent use; any number of runs share it.
type Machine struct {
	prog   *bytecode.Program
	funcs  []Func
	hash   [32]byte
	graphs []graphInfo

	cacheOnce sync.Once
	cache     Cache // the default cache (MemCache), made on first use
}

// graphInfo holds what the scheduler needs about one graph, computed once.
type graphInfo struct {
	scratch    sync.Pool // *runScratch: working memory of finished runs
	index      int
	g          *bytecode.Graph
	schemaHash [32]byte
	fields     []bytecode.StateField
	sized      bool // some field declares a list size
	fieldTypes []*types.Type
	elemTypes  []*types.Type // append fields: the element type, else nil
	defaults   []types.Value // initial state: defaults, null where none
	errorField int           // index of ErrorField, or -1
	start, end int32
	paths      []string // "graph/node" per node
	layout     CounterLayout
	edgeBase   []int32 // per node: its first loop-counter slot
	nEdges     int     // loop-counter slots
	bounded    []int32 // the slots of `max N` edges (the only counters that move)
	joinBase   []int32 // per node: its first join-arrival slot, -1 for non-joins
	joinIndex  []int32 // per node: its index among joins, -1 for non-joins
	nArrive    int     // join-arrival slots
	nJoins     int     //
	host       []bool  // per node: does it call the host (llm, tool, agent, graph, map)?
	anyHost    bool
	resultType []*types.Type
	needsClock bool // a node has a timeout, backoff or cache ttl, or is a wait
	needsRand  bool // a node has jittered backoff
}

// New verifies p, binds its functions against funcs (nil: Builtins()) and
// precomputes the graph tables. A program that was built in memory and never
// sealed gets its content hash computed here (p itself is not modified).
func New(p *bytecode.Program, funcs map[string]Func) (*Machine, error) {
	if p == nil {
		return nil, errors.New("vm: nil program")
	}
	if err := bytecode.Verify(p); err != nil {
		return nil, fmt.Errorf("vm: program does not verify: %w", err)
	}
	return load(p, funcs)
}

// NewVerified is New for a program that already passed bytecode.Verify in
// this process: what compiler.Compile returns, or bytecode.Decode followed
// by Verify. It does not verify p again (nor, when p carries its hash, as
// Compile and Decode leave it, encode it). Loading a program that was not
// verified this way is a bug: the machine trusts every table Verify checks.
func NewVerified(p *bytecode.Program, funcs map[string]Func) (*Machine, error) {
	if p == nil {
		return nil, errors.New("vm: nil program")
	}
	return load(p, funcs)
}

// load binds the functions of a verified program and precomputes its
// tables.
func load(p *bytecode.Program, funcs map[string]Func) (*Machine, error) {
	if funcs == nil {
		funcs = Builtins()
	}
	for _, name := range p.Funcs {
		if f, ok := funcs[name]; ok && f == nil {
			return nil, fmt.Errorf("vm: builtin function %q is nil", name)
		}
	}
	bound, err := bytecode.BindFuncs(p, funcs)
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	m := &Machine{prog: p, funcs: bound, hash: p.Hash}
	stateHashes := make([][32]byte, len(p.States))
	for i := range p.States {
		stateHashes[i] = p.States[i].Hash
	}
	if m.hash == ([32]byte{}) {
		b, err := bytecode.Encode(p)
		if err != nil {
			return nil, fmt.Errorf("vm: hash program: %w", err)
		}
		m.hash = bytecode.HashOf(b)
		for i := range p.States {
			if stateHashes[i], err = bytecode.StateHash(p, i); err != nil {
				return nil, fmt.Errorf("vm: hash program: %w", err)
			}
		}
	}
	m.graphs = make([]graphInfo, len(p.Graphs))
	for gi := range p.Graphs {
		if err := m.loadGraph(gi, stateHashes); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Program returns the machine's program. It must not be modified.
func (m *Machine) Program() *bytecode.Program { return m.prog }

// Hash returns the program's content hash, which checkpoints record.
func (m *Machine) Hash() [32]byte { return m.hash }

// Graph returns the index of the named graph.
func (m *Machine) Graph(name string) (int, bool) {
	for i := range m.prog.Graphs {
		if m.prog.Graphs[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

func (m *Machine) loadGraph(gi int, stateHashes [][32]byte) error {
	p := m.prog
	g := &p.Graphs[gi]
	st := &p.States[g.State]
	info := &m.graphs[gi]
	*info = graphInfo{
		index:      gi,
		g:          g,
		schemaHash: stateHashes[g.State],
		fields:     st.Fields,
		errorField: -1,
		start:      int32(g.Start()),
		end:        int32(g.End()),
	}
	n := len(st.Fields)
	info.fieldTypes = make([]*types.Type, n)
	info.elemTypes = make([]*types.Type, n)
	info.defaults = make([]types.Value, n)
	for i, f := range st.Fields {
		t := p.Types[f.Type]
		info.fieldTypes[i] = t
		if f.Reducer == bytecode.ReduceAppend {
			base := t
			if base.Kind() == types.KindOptional {
				base = base.Elem()
			}
			info.elemTypes[i] = base.Elem()
		}
		if f.HasDefault {
			info.defaults[i] = p.Consts[f.Default]
		}
		if f.Name == ErrorField {
			info.errorField = i
		}
		if f.MaxLen != 0 {
			info.sized = true
		}
	}
	nn := len(g.Nodes)
	info.paths = make([]string, nn)
	info.layout = Layout(g)
	info.edgeBase, info.nEdges, info.bounded = info.layout.EdgeBase, info.layout.Edges, info.layout.Bounded
	info.joinBase, info.joinIndex = info.layout.JoinBase, info.layout.JoinIndex
	info.nArrive, info.nJoins = info.layout.Arrivals, info.layout.Joins
	info.host = make([]bool, nn)
	info.resultType = make([]*types.Type, nn)
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		info.paths[i] = g.Name + "/" + nd.Name
		switch nd.Kind {
		case bytecode.NodeLLM, bytecode.NodeTool, bytecode.NodeAgent, bytecode.NodeGraph, bytecode.NodeMap:
			info.host[i], info.anyHost = true, true
			if nd.Into != bytecode.None {
				f := int(nd.Into)
				if et := info.elemTypes[f]; et != nil {
					info.resultType[i] = et
				} else {
					info.resultType[i] = info.fieldTypes[f]
				}
			}
			if nd.Timeout > 0 || (nd.Retry.MaxAttempts > 1 && nd.Retry.BackoffMin > 0) || nd.CacheTTL > 0 {
				info.needsClock = true
			}
			if nd.Retry.MaxAttempts > 1 && nd.Retry.BackoffMin > 0 && nd.Retry.Jitter {
				info.needsRand = true
			}
		case bytecode.NodeWait:
			info.needsClock = true
		case bytecode.NodeInterrupt:
			if nd.Timeout > 0 {
				info.needsClock = true
			}
		}
	}
	return nil
}

// predPos returns the position of node pred among join j's predecessors, or
// -1.
func (gi *graphInfo) predPos(j, pred int32) int {
	for i, p := range gi.g.Nodes[j].Join.Preds {
		if int32(p) == pred {
			return i
		}
	}
	return -1
}

// fieldIndex returns the index of the named state field, or -1.
func (gi *graphInfo) fieldIndex(name string) int {
	for i := range gi.fields {
		if gi.fields[i].Name == name {
			return i
		}
	}
	return -1
}
