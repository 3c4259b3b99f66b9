package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
)

// The generator: deterministic long multi-session conversations of one
// user with an operations assistant, with exact facts (serial numbers,
// dates, asset tags) planted in user messages, assistant replies and the
// middle of 12 KB tool results, and decoys around them: the same hosts and
// the same phrasing for other hosts' facts, and chatter about the hosts
// without the fact.

// fact is one planted fact and the question that asks for it.
type fact struct {
	kind    string // serial, date, asset
	host    string
	value   string // the exact value the load must return
	query   string
	session int // index of the session it is in
	turn    int
	eventID string // filled when the events are written
	seq     uint64
	hidden  bool // in the current session, behind the summary boundary
	inTool  bool // inside a 12 KB tool result
	rounds  int  // earlier recall rounds that asked for it
}

var words = strings.Fields(`latency throughput deploy rollout canary cluster node pod queue broker cache shard replica
	index migration schema backup snapshot restore failover region zone gateway proxy ingress certificate token rotation
	quota budget alert pager incident postmortem runbook dashboard metric trace span sampling retention archive
	compaction vacuum checkpoint lease lock election heartbeat probe readiness liveness autoscaler scheduler cron batch
	stream topic partition consumer producer offset lag billing invoice ledger payment refund audit compliance policy
	firewall subnet route peering tunnel vpn dns resolver ttl record zonefile registry image build pipeline artifact
	release tag branch review merge revert hotfix patch kernel driver firmware disk volume raid controller fan sensor`)

var hostNames = strings.Fields(`orion lyra vega altair rigel deneb sirius polaris castor pollux antares spica arcturus
	capella aldebaran bellatrix mira electra maia atlas pleione merope taygeta alcyone`)

// gen holds the generator's state.
type gen struct {
	r     *rand.Rand
	hosts []string
	n     int // events written (ids)
	now   time.Time
}

// baseHosts is the fleet of the default corpus: 25 names × 3 numbers.
const baseHosts = 75

// turnsPerHost is how many turns of the corpus there are per host: the
// fleet grows with the corpus (a longer history spans more machines), so
// the questions and chatter about one host — near-duplicates of the event
// that answers a question about it — stay as dense at 25K events per
// session as in the default corpus (960 turns, 75 hosts), instead of
// growing linearly with its size.
const turnsPerHost = 13

// newGen returns a generator over a fleet of at least hosts hosts: the 75
// of the default corpus first, then the same names with more numbers
// (orion-3, orion-17, orion-42, orion-108, …), near-duplicate identifiers.
func newGen(seed uint64, hosts int) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)}
	for _, h := range hostNames {
		for _, n := range []int{3, 17, 42} {
			g.hosts = append(g.hosts, fmt.Sprintf("%s-%d", h, n))
		}
	}
	for i := 0; len(g.hosts) < hosts; i++ {
		g.hosts = append(g.hosts, fmt.Sprintf("%s-%d", hostNames[i%len(hostNames)], 100+i/len(hostNames)*7+i%5))
	}
	return g
}

func (g *gen) word() string { return words[g.r.IntN(len(words))] }
func (g *gen) host() string { return g.hosts[g.r.IntN(len(g.hosts))] }

func (g *gen) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
}

func (g *gen) chatter(host string) string {
	return fmt.Sprintf("About %s: %s %s", host, g.sentence(8+g.r.IntN(8)), g.sentence(6+g.r.IntN(6)))
}

func (g *gen) serial() string {
	return fmt.Sprintf("SN-%04d-%c%c", g.r.IntN(10000), 'A'+rune(g.r.IntN(26)), 'A'+rune(g.r.IntN(26)))
}

func (g *gen) date() string {
	return fmt.Sprintf("2027-%02d-%02d", 1+g.r.IntN(12), 1+g.r.IntN(28))
}

func (g *gen) asset() string { return fmt.Sprintf("AT-%05d", g.r.IntN(100000)) }

// newFact makes a fact about a host not used by another fact of its kind.
func (g *gen) newFact(kind string, used map[string]bool) *fact {
	h := g.host()
	for used[kind+h] {
		h = g.host()
	}
	used[kind+h] = true
	f := &fact{kind: kind, host: h}
	switch kind {
	case "serial":
		f.value = g.serial()
		f.query = "serial number of the replacement disk for " + h
	case "date":
		f.value = g.date()
		f.query = "when is the maintenance window for " + h
	case "asset":
		f.value = g.asset()
		f.query = "asset tag of " + h + " in the inventory dump"
		f.inTool = true
	}
	return f
}

func (f *fact) sentence() string {
	switch f.kind {
	case "serial":
		return fmt.Sprintf("The replacement disk for %s has serial number %s.", f.host, f.value)
	case "date":
		return fmt.Sprintf("The maintenance window for %s is scheduled for %s.", f.host, f.value)
	}
	return fmt.Sprintf("inventory: host %s asset tag %s rack r%02d", f.host, f.value, 7)
}

// toolResult is about size bytes of an inventory dump with line inside it
// (a planted fact, a decoy, or nothing).
func (g *gen) toolResult(size int, line string) json.RawMessage {
	var b strings.Builder
	at := size/3 + g.r.IntN(size/3)
	for i := 0; b.Len() < size; i++ {
		if line != "" && b.Len() >= at {
			b.WriteString(line)
			b.WriteString("\n")
			line = ""
		}
		fmt.Fprintf(&b, "inventory: host node-%04d asset tag AT-%05d rack r%02d status %s %s\n", g.r.IntN(10000), g.r.IntN(100000), g.r.IntN(40), g.word(), g.word())
	}
	out, _ := json.Marshal(map[string]string{"dump": b.String()})
	return out
}

// event builds one ledger event.
func (g *gen) event(app, user, sess, run string, kind runtime.EventKind) *runtime.Event {
	g.n++
	g.now = g.now.Add(17 * time.Second)
	return &runtime.Event{ID: fmt.Sprintf("01CTX%021d", g.n), Kind: kind, Time: g.now, App: app, User: user, Session: sess,
		Run: run, Persisted: true}
}

// recallRound is one earlier recall round asking for f, as an agent with
// the recall tools leaves it in the ledger: the user's question, the
// model's session_search call and its cards (the fact's sentence in a
// snippet), a session_load call and its window (the sentence again), and
// the answer quoting the fact. Its own run, as a user message is.
func (g *gen) recallRound(app, user, sess, run string, f *fact) []*runtime.Event {
	run = fmt.Sprintf("%s_r%d", run, g.n)
	in := g.event(app, user, sess, run, runtime.EventInput)
	in.Author, in.Text = "user", "Remind me: "+f.query+"?"
	var out []*runtime.Event
	out = append(out, in)
	call := func(name string, args, result any) {
		id := fmt.Sprintf("call_%d", g.n)
		a, _ := json.Marshal(args)
		mr := g.event(app, user, sess, run, runtime.EventModelResponse)
		mr.Author, mr.Node, mr.Turn = "assistant", "assistant", 1
		mr.ToolCalls = []runtime.ToolCall{{ID: id, Name: name, Args: a}}
		tr := g.event(app, user, sess, run, runtime.EventToolResult)
		tr.Author, tr.Node = "assistant", "assistant"
		tr.ToolCall = &runtime.ToolCall{ID: id, Name: name, Args: a}
		tr.Result, _ = json.Marshal(result)
		out = append(out, mr, tr)
	}
	call("session_search", map[string]any{"query": f.query}, map[string]any{"query": f.query, "scope": "all_sessions",
		"hits": []map[string]any{{"event_id": f.eventID, "snippet": f.sentence(), "score": 0.93}}})
	call("session_load", map[string]any{"event_id": f.eventID}, map[string]any{"note": "Historical context only",
		"events": []map[string]any{{"event_id": f.eventID, "content": g.chatter(f.host) + " " + f.sentence()}}})
	ans := g.event(app, user, sess, run, runtime.EventModelResponse)
	ans.Author, ans.Node, ans.Turn, ans.FinishReason = "assistant", "assistant", 2, "stop"
	ans.Text = "From the history: " + f.sentence()
	return append(out, ans)
}
