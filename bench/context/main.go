// Command context measures context governance on generated conversations,
// in two experiments.
//
// Recall: exact facts (serial numbers, dates, asset tags inside 12 KB tool
// results) are planted in one user's sessions, a summary hides the older
// part of the current session, and each fact is asked for with
// session_search (current_hidden for facts behind the summary,
// other_sessions for facts in earlier sessions) and read back with
// session_load.
//
// Savings (savings.go): conversations of 1 to 64 runs, and long ones of
// about 100K tokens, are driven through a runtime.Runner with a
// runtime/history Service and scripted models under each context
// configuration (full history, summary, summary+compaction, an every-2-turns
// trigger, summary+recall, and probes), counting the prompt tokens of every
// model call and the summarizer's tokens.
//
// It prints the tables and one JSON document.
//
//	go run ./bench/context [-quick] [-only recall|savings] [-seed 1] [-json FILE] [-cpuprofile FILE]
//	    recall:  [-sessions 12] [-turns 80] [-facts 60] [-store pebble|memory] [-v]
//	    savings: [-lengths 1,2,4,8,16,32,64] [-convs 12] [-long 3] [-long-tokens 100000]
//	             [-window 128000] [-savings-store memory|pebble] [-workers N]
//
// Recall figures:
//
//	recall@1, recall@5  share of planted facts whose event is the first /
//	                    among the first five cards
//	load exact          share of facts whose session_load window (the card
//	                    that is the planted event, else the first card)
//	                    contains the exact planted value
//	pages               session_load pages of 4 KiB read to reach a value
//	                    inside a 12 KB tool result
//	tokens              the current session's history in full vs its
//	                    projection (summary + events after the boundary),
//	                    counted by runtime/history for gpt-4o-mini, and the
//	                    tokens one search plus one load add
//
// Savings figures, per conversation length and configuration (savings.go
// documents them): prompt tokens, summary calls and tokens, savings against
// full history with the summaries' tokens as cost, the share of
// conversations with negative savings, and the last run's savings.
//
// The recall corpus is adversarial on purpose: every chat message names a host,
// a fifth of the user's messages ask "did anyone note the replacement disk
// serial number or the maintenance window for HOST?" (the facts' words and
// often the same host, without the value), and facts of the same kind for
// other hosts use the same phrasing. Misses of recall@1 are mostly such
// questions ranked above the answer (-v prints them); recall@5 and load
// exact count whether the answer is within reach of one search and one load.
//
// Stores live under $AGENTC_BENCH_DIR (default: the system's temporary
// directory).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/pebble"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type config struct {
	Sessions  int    `json:"sessions"`
	Turns     int    `json:"turns"`
	Facts     int    `json:"facts"`
	Seed      uint64 `json:"seed"`
	Store     string `json:"store"`
	ToolBytes int    `json:"tool_result_bytes"`
	// Rounds is how many earlier recall rounds (question, session_search,
	// session_load, an answer quoting the fact) every other fact has
	// after it, in its session.
	Rounds int `json:"recall_rounds"`
	Hosts  int `json:"hosts"`
}

// Report is the JSON document.
type Report struct {
	Config *config `json:"config,omitempty"`
	Corpus *corpus `json:"corpus,omitempty"`
	Rows   []Row   `json:"rows,omitempty"`
	Tokens *Tokens `json:"tokens,omitempty"`
	// Savings is the savings experiment (savings.go).
	Savings *SavingsReport `json:"savings,omitempty"`
	// SearchP50Ms and LoadP50Ms are warm latencies (index up to date).
	SearchP50Ms float64 `json:"search_p50_ms,omitempty"`
	SearchP99Ms float64 `json:"search_p99_ms,omitempty"`
	// SearchCPUP50Ms is the process's CPU time (user + system) per
	// search, median: what a search costs whatever else loads the machine.
	SearchCPUP50Ms float64 `json:"search_cpu_p50_ms,omitempty"`
	LoadP50Ms      float64 `json:"load_p50_ms,omitempty"`
	// OpenMs is the time to open the store again (pebble only); ReadyMs
	// the time from there to the first search's answer.
	OpenMs     float64 `json:"open_ms,omitempty"`
	ReadyMs    float64 `json:"ready_ms,omitempty"`
	ReadyCPUMs float64 `json:"ready_cpu_ms,omitempty"`
	// Scale is the recall experiment at growing session sizes (-sizes).
	Scale []ScaleRow `json:"scale,omitempty"`
}

// ScaleRow is the recall experiment at one session size.
type ScaleRow struct {
	EventsPerSession int     `json:"events_per_session"`
	Sessions         int     `json:"sessions"`
	Events           int     `json:"events"`
	Hosts            int     `json:"hosts"`
	IndexSeconds     float64 `json:"index_seconds"`
	OpenMs           float64 `json:"open_ms"`
	ReadyMs          float64 `json:"ready_ms"`
	ReadyCPUMs       float64 `json:"ready_cpu_ms"`
	RecallAt1        float64 `json:"recall_at_1"`
	RecallAt5        float64 `json:"recall_at_5"`
	AskedBeforeAt1   float64 `json:"asked_before_recall_at_1"`
	LoadExact        float64 `json:"load_exact"`
	SearchP50Ms      float64 `json:"search_p50_ms"`
	SearchP99Ms      float64 `json:"search_p99_ms"`
	SearchCPUP50Ms   float64 `json:"search_cpu_p50_ms"`
}

// corpus describes the recall experiment's generated corpus.
type corpus struct {
	Events       int     `json:"events"`
	ToolResults  int     `json:"tool_results"`
	LedgerBytes  int     `json:"ledger_bytes"`
	IndexSeconds float64 `json:"index_seconds"`
}

// Row is one group of facts.
type Row struct {
	Group     string  `json:"group"`
	Facts     int     `json:"facts"`
	RecallAt1 float64 `json:"recall_at_1"`
	RecallAt5 float64 `json:"recall_at_5"`
	LoadExact float64 `json:"load_exact"`
	Pages     float64 `json:"avg_pages,omitempty"`
}

// Tokens compares the current session's full history with its projection.
type Tokens struct {
	Encoding       string  `json:"encoding"`
	Full           int     `json:"full_history"`
	Projected      int     `json:"projected"`
	Savings        float64 `json:"savings"`
	RecallPerQuery int     `json:"recall_tokens_per_question"`
	WithRecall     float64 `json:"savings_with_one_recall"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("context", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small corpora (under 30 s)")
	only := fs.String("only", "", "run one experiment: recall or savings (default: both)")
	cfg := config{}
	fs.IntVar(&cfg.Sessions, "sessions", 12, "recall: sessions of the user (the last is the current one)")
	fs.IntVar(&cfg.Turns, "turns", 80, "recall: turns per session")
	fs.IntVar(&cfg.Facts, "facts", 60, "recall: planted facts")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "generator seed")
	fs.StringVar(&cfg.Store, "store", "pebble", "recall: pebble or memory")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "recall: earlier recall rounds asking for every other fact")
	fs.IntVar(&cfg.Hosts, "hosts", 0, "recall: hosts of the fleet (0: 75, or one per 13 turns when more; 75 with -rounds 0 is the corpus before the fleet grew)")
	sizes := fs.String("sizes", "", "recall: also run at these events per session (e.g. 1000,5000,25000), one row each")
	fs.IntVar(&scaleSessions, "scale-sessions", 2, "recall: sessions of the -sizes rows")
	sc := savingsConfig{Model: "gpt-4o-mini"}
	lengths := fs.String("lengths", "1,2,4,8,16,32,64", "savings: runs per conversation, one row each")
	fs.IntVar(&sc.Conversations, "convs", 12, "savings: conversations per length")
	fs.IntVar(&sc.Long, "long", 3, "savings: long conversations (the long row; 0: none)")
	fs.IntVar(&sc.LongTokens, "long-tokens", 100_000, "savings: full-history tokens a long conversation reaches")
	fs.IntVar(&sc.Window, "window", 128_000, "savings: the agent model's context_window")
	fs.StringVar(&sc.Store, "savings-store", "memory", "savings: memory or pebble (one store per conversation and configuration)")
	fs.IntVar(&sc.Workers, "workers", defaultWorkers(), "savings: conversations run at once")
	jsonOut := fs.String("json", "", "also write the JSON report to FILE")
	fs.BoolVar(&verbose, "v", false, "recall: print the cards of every fact not found first")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to FILE")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		cfg.Sessions, cfg.Turns, cfg.Facts = 4, 40, 24
		if !set["lengths"] {
			*lengths = "1,2,4,8,16,32"
		}
		if !set["convs"] {
			sc.Conversations = 3
		}
		if !set["long"] {
			sc.Long = 1
		}
	}
	cfg.ToolBytes = 12 << 10
	sc.Seed = cfg.Seed
	var err error
	if sc.Lengths, err = parseCounts(*lengths, 1, 10_000, "a run count"); err != nil {
		fmt.Fprintln(stderr, "context: -lengths:", err)
		return 2
	}
	switch {
	case *only != "" && *only != "recall" && *only != "savings":
		fmt.Fprintf(stderr, "context: -only %q: want recall or savings\n", *only)
		return 2
	case cfg.Store != "pebble" && cfg.Store != "memory", sc.Store != "pebble" && sc.Store != "memory":
		fmt.Fprintln(stderr, "context: -store and -savings-store take pebble or memory")
		return 2
	case cfg.Sessions < 1 || cfg.Turns < 2 || cfg.Facts < 0:
		fmt.Fprintln(stderr, "context: -sessions must be at least 1, -turns at least 2, -facts not negative")
		return 2
	case sc.Conversations < 1 || sc.Long < 0 || sc.LongTokens < 1000 || sc.Window < 1000 || sc.Workers < 1:
		fmt.Fprintln(stderr, "context: -convs and -workers must be at least 1, -long not negative, -long-tokens and -window at least 1000")
		return 2
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(stderr, "context:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "context:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	var scaleSizes []int
	if *sizes != "" {
		if scaleSizes, err = parseCounts(*sizes, 100, 1_000_000, "an event count"); err != nil || scaleSessions < 1 {
			fmt.Fprintln(stderr, "context: -sizes takes event counts of at least 100 per session; -scale-sessions at least 1")
			return 2
		}
	}
	rep := &Report{}
	if *only != "savings" {
		if rep, err = bench(cfg); err != nil {
			fmt.Fprintln(stderr, "context: recall:", err)
			return 1
		}
		printTable(stdout, rep)
		for _, n := range scaleSizes {
			row, err := scale(cfg, n)
			if err != nil {
				fmt.Fprintln(stderr, "context: recall at scale:", err)
				return 1
			}
			rep.Scale = append(rep.Scale, row)
		}
		printScale(stdout, rep.Scale)
	}
	if *only != "recall" {
		if rep.Savings, err = savings(context.Background(), sc); err != nil {
			fmt.Fprintln(stderr, "context: savings:", err)
			return 1
		}
		printSavings(stdout, rep.Savings)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintln(stdout, string(b))
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "context:", err)
			return 1
		}
	}
	return 0
}

// scaleSessions is the number of sessions of a -sizes row.
var scaleSessions int

// eventsPerTurn is about how many events one generated turn writes (input,
// answer, a tool round on 30% of turns, recall rounds).
const eventsPerTurn = 2.62

// scale runs the recall experiment with sessions of about n events each.
func scale(base config, n int) (ScaleRow, error) {
	cfg := base
	// The recall rounds write 7 events each.
	rounds := float64((cfg.Facts+3)/4*2*cfg.Rounds*7) / float64(scaleSessions)
	cfg.Sessions, cfg.Turns = scaleSessions, max(2, int((float64(n)-rounds)/eventsPerTurn))
	rep, err := bench(cfg)
	if err != nil {
		return ScaleRow{}, err
	}
	row := ScaleRow{EventsPerSession: n, Sessions: cfg.Sessions, Events: rep.Corpus.Events, Hosts: rep.Config.Hosts,
		IndexSeconds: round(rep.Corpus.IndexSeconds), OpenMs: rep.OpenMs, ReadyMs: rep.ReadyMs, ReadyCPUMs: rep.ReadyCPUMs, SearchP50Ms: rep.SearchP50Ms, SearchP99Ms: rep.SearchP99Ms, SearchCPUP50Ms: rep.SearchCPUP50Ms}
	for _, r := range rep.Rows {
		switch {
		case r.Group == "all":
			row.RecallAt1, row.RecallAt5, row.LoadExact = r.RecallAt1, r.RecallAt5, r.LoadExact
		case strings.HasPrefix(r.Group, "asked before"):
			row.AskedBeforeAt1 = r.RecallAt1
		}
	}
	return row, nil
}

func printScale(w io.Writer, rows []ScaleRow) {
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "events/session\tsessions\tevents\thosts\tindex s\topen ms\tready ms (cpu)\trecall@1\trecall@5\tasked-before @1\tload exact\tsearch p50 ms\tp99 ms\tcpu p50 ms\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f (%.1f)\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\t%.2f\t%.2f\t\n", r.EventsPerSession, r.Sessions, r.Events, r.Hosts,
			r.IndexSeconds, r.OpenMs, r.ReadyMs, r.ReadyCPUMs, r.RecallAt1, r.RecallAt5, r.AskedBeforeAt1, r.LoadExact, r.SearchP50Ms, r.SearchP99Ms, r.SearchCPUP50Ms)
	}
	tw.Flush()
}

// parseCounts parses a comma-separated list of counts in [lo, hi] (what
// names them in errors).
func parseCounts(s string, lo, hi int, what string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q is not %s in %d..%d", f, what, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchStore is a store of the recall experiment; reopen closes a pebble
// store and opens its directory again (a memory store stays as it is).
type benchStore struct {
	store.Store
	dir string
}

func openStore(kind string) (*benchStore, func(), error) {
	if kind == "memory" {
		return &benchStore{Store: memstore.New()}, func() {}, nil
	}
	dir, err := os.MkdirTemp(os.Getenv("AGENTC_BENCH_DIR"), "agentc-bench-context-")
	if err != nil {
		return nil, nil, err
	}
	st, err := pebble.Open(dir, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	bs := &benchStore{Store: st, dir: dir}
	return bs, func() { bs.Store.(*pebble.Store).Close(); os.RemoveAll(dir) }, nil
}

func (bs *benchStore) reopen() error {
	if bs.dir == "" {
		return nil
	}
	if err := bs.Store.(*pebble.Store).Close(); err != nil {
		return err
	}
	st, err := pebble.Open(bs.dir, nil)
	if err != nil {
		return err
	}
	bs.Store = st
	return nil
}

const app, user = "bench", "u1"

var verbose bool

func sessionKey(i int) store.SessionKey {
	return store.SessionKey{App: app, User: user, Session: fmt.Sprintf("s%02d", i)}
}

// write generates the corpus into st and returns the planted facts.
func write(ctx context.Context, st store.Store, cfg *config, rep *Report) ([]*fact, error) {
	if cfg.Hosts <= 0 {
		cfg.Hosts = max(baseHosts, cfg.Sessions*cfg.Turns/turnsPerHost)
	}
	g := newGen(cfg.Seed, cfg.Hosts)
	cur := cfg.Sessions - 1
	hiddenTurns := cfg.Turns * 8 / 10
	used := map[string]bool{}
	kinds := []string{"serial", "date", "asset"}
	at := map[[2]int][]*fact{}
	var facts []*fact
	for i := range cfg.Facts {
		f := g.newFact(kinds[i%3], used)
		if i%2 == 0 || cfg.Sessions == 1 {
			f.session, f.turn, f.hidden = cur, g.r.IntN(hiddenTurns), true
		} else {
			f.session, f.turn = g.r.IntN(cur), g.r.IntN(cfg.Turns)
		}
		at[[2]int{f.session, f.turn}] = append(at[[2]int{f.session, f.turn}], f)
		facts = append(facts, f)
	}
	// Earlier recall rounds: every other fact is asked for again, later in
	// its session, Rounds times.
	asked := map[[2]int][]*fact{}
	for i, f := range facts {
		if i%4 >= 2 || f.turn+1 >= cfg.Turns {
			continue
		}
		f.rounds = cfg.Rounds
		for range cfg.Rounds {
			t := f.turn + 1 + g.r.IntN(cfg.Turns-f.turn-1)
			asked[[2]int{f.session, t}] = append(asked[[2]int{f.session, t}], f)
		}
	}
	var boundary uint64
	for s := range cfg.Sessions {
		key := sessionKey(s)
		if _, _, err := st.GetOrCreateSession(ctx, key, g.now); err != nil {
			return nil, err
		}
		// One run record per session (a record per turn would cost a synced
		// write each); the events carry one run id per turn, as a session
		// of one run per user message does.
		runID := fmt.Sprintf("run_%02d", s)
		if err := st.CreateRun(ctx, store.Run{ID: runID, Session: key, Runnable: "assistant", Status: store.RunCompleted, Created: g.now, Updated: g.now}); err != nil {
			return nil, err
		}
		var evs []*runtime.Event
		add := func(e *runtime.Event) {
			e.Seq = uint64(len(evs) + 1)
			evs = append(evs, e)
		}
		rs := g.event(app, user, key.Session, runID, runtime.EventRunStarted)
		rs.Runnable, rs.Status = "assistant", runtime.StatusRunning
		add(rs)
		for t := range cfg.Turns {
			runID := fmt.Sprintf("run_%02d_%05d", s, t)
			planted := at[[2]int{s, t}]
			in := g.event(app, user, key.Session, runID, runtime.EventInput)
			in.Author = "user"
			in.Text = g.chatter(g.host())
			if g.r.IntN(5) == 0 { // a decoy question with the facts' words and no value
				in.Text += fmt.Sprintf(" Did anyone note the replacement disk serial number or the maintenance window for %s?", g.host())
			}
			var inAssistant, inTool []*fact
			for k, f := range planted {
				switch {
				case f.inTool:
					inTool = append(inTool, f)
				case k%2 == 0 && f.kind == "serial" || f.kind == "date" && t%2 == 0:
					in.Text += " " + f.sentence()
					f.eventID, f.seq = in.ID, uint64(len(evs)+1)
				default:
					inAssistant = append(inAssistant, f)
				}
			}
			add(in)
			if len(inTool) > 0 || g.r.IntN(10) < 3 {
				h := fmt.Sprintf("node-%04d", g.r.IntN(10000)) // a host no fact is about
				var lines []string
				for _, f := range inTool {
					h = f.host
					lines = append(lines, f.sentence())
				}
				line := strings.Join(lines, "\n")
				callID := fmt.Sprintf("call_%d", g.n)
				mr := g.event(app, user, key.Session, runID, runtime.EventModelResponse)
				mr.Author, mr.Node, mr.Turn = "assistant", "assistant", 1
				mr.ToolCalls = []runtime.ToolCall{{ID: callID, Name: "inventory_dump", Args: json.RawMessage(fmt.Sprintf(`{"host":%q}`, h))}}
				add(mr)
				tr := g.event(app, user, key.Session, runID, runtime.EventToolResult)
				tr.Author, tr.Node = "assistant", "assistant"
				tr.ToolCall = &runtime.ToolCall{ID: callID, Name: "inventory_dump", Args: mr.ToolCalls[0].Args}
				tr.Result = g.toolResult(cfg.ToolBytes, line)
				add(tr)
				rep.Corpus.ToolResults++
				for _, f := range inTool {
					f.eventID, f.seq = tr.ID, tr.Seq
				}
			}
			out := g.event(app, user, key.Session, runID, runtime.EventModelResponse)
			out.Author, out.Node, out.Turn, out.FinishReason = "assistant", "assistant", 2, "stop"
			out.Text = g.chatter(g.host())
			for _, f := range inAssistant {
				out.Text += " " + f.sentence()
				f.eventID, f.seq = out.ID, uint64(len(evs)+1)
			}
			add(out)
			for _, f := range asked[[2]int{s, t}] {
				for _, e := range g.recallRound(app, user, key.Session, runID, f) {
					add(e)
				}
			}
			if s == cur && t == cfg.Turns*85/100 {
				boundary = out.Seq
			}
		}
		var data [][]byte
		for _, e := range evs {
			seq := e.Seq
			e.Seq = 0
			b, err := runtime.EncodeEvent(e)
			if err != nil {
				return nil, err
			}
			e.Seq = seq
			data = append(data, b)
			rep.Corpus.LedgerBytes += len(b)
		}
		for len(data) > 0 {
			n := min(len(data), 64)
			if _, err := st.AppendEvents(ctx, key, data[:n], g.now); err != nil {
				return nil, err
			}
			data = data[n:]
		}
		rep.Corpus.Events += len(evs)
	}
	if boundary > 0 {
		sum := store.Summary{Text: "The user and the assistant discussed host maintenance, disks and inventory; details are in the history.", Boundary: boundary, Time: g.now}
		if err := st.PutSummary(ctx, sessionKey(cur), sum); err != nil {
			return nil, err
		}
	}
	for _, f := range facts {
		if f.eventID == "" {
			return nil, fmt.Errorf("fact %s of %s was not planted", f.kind, f.host)
		}
	}
	return facts, nil
}

func bench(cfg config) (*Report, error) {
	ctx := context.Background()
	st, done, err := openStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	defer done()
	rep := &Report{Config: &cfg, Corpus: &corpus{}}
	facts, err := write(ctx, st, &cfg, rep)
	if err != nil {
		return nil, err
	}
	idx := recall.NewIndex(st, nil)
	start := time.Now()
	for s := range cfg.Sessions {
		if _, err := idx.CatchUp(ctx, sessionKey(s)); err != nil {
			return nil, err
		}
	}
	rep.Corpus.IndexSeconds = time.Since(start).Seconds()
	cur := sessionKey(cfg.Sessions - 1)
	if st.dir != "" && len(facts) > 0 {
		// Ready: open the store again and answer a first search, the index
		// as it was left (nothing is rebuilt on open). The build's garbage
		// is collected first: a process that opens a store has none.
		goruntime.GC()
		start = time.Now()
		if err := st.reopen(); err != nil {
			return nil, err
		}
		rep.OpenMs = round(float64(time.Since(start).Microseconds()) / 1000)
		start, c0 := time.Now(), cputime.Process()
		idx = recall.NewIndex(st, nil)
		if _, err := idx.Search(ctx, recall.SearchRequest{Session: cur, Query: facts[len(facts)-1].query, Scope: recall.ScopeAllSessions, TopK: 5}); err != nil {
			return nil, err
		}
		rep.ReadyMs = round(float64(time.Since(start).Microseconds()) / 1000)
		rep.ReadyCPUMs = round(float64((cputime.Process() - c0).Microseconds()) / 1000)
	}
	search, load := recall.NewSearchTool(idx, nil), recall.NewLoadTool(idx, nil)
	type outcome struct {
		f             *fact
		rank          int
		exact         bool
		pages         int
		searchT, load time.Duration
		searchCPU     time.Duration
		recallTokens  string
	}
	var outs []outcome
	for _, f := range facts {
		scope := recall.ScopeOtherSessions
		if f.hidden {
			scope = recall.ScopeCurrentHidden
		}
		args, _ := json.Marshal(map[string]any{"query": f.query, "scope": scope, "top_k": 5})
		t0, c0 := time.Now(), cputime.Process()
		out, err := search.Call(ctx, runtime.ToolRequest{Args: args, Session: cur})
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", f.query, err)
		}
		o := outcome{f: f, searchT: time.Since(t0), searchCPU: cputime.Process() - c0}
		var res recall.SearchResult
		if err := json.Unmarshal(out, &res); err != nil {
			return nil, err
		}
		var pick *recall.Card
		for i := range res.Hits {
			if res.Hits[i].EventID == f.eventID {
				o.rank, pick = i+1, &res.Hits[i]
				break
			}
		}
		if pick == nil && len(res.Hits) > 0 {
			pick = &res.Hits[0]
		}
		o.recallTokens = string(out)
		if verbose && o.rank != 1 {
			fmt.Fprintf(os.Stderr, "miss (rank %d): %s [%s] want %s %s\n", o.rank, f.query, scope, f.kind, f.value)
			for _, h := range res.Hits[:min(3, len(res.Hits))] {
				fmt.Fprintf(os.Stderr, "   %s %.3f %s %.120q\n", h.Kind, h.Score, h.EventID, h.Snippet)
			}
		}
		if pick != nil {
			largs, _ := json.Marshal(map[string]any{"session_id": pick.Session, "event_id": pick.EventID})
			t0 = time.Now()
			lout, err := load.Call(ctx, runtime.ToolRequest{Args: largs, Session: cur})
			o.load = time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", pick.EventID, err)
			}
			o.exact = strings.Contains(string(lout), f.value)
			o.recallTokens += string(lout)
			if f.inTool && o.rank > 0 {
				o.pages, err = pagesTo(ctx, load, cur, pick, f.value)
				if err != nil {
					return nil, err
				}
			}
		}
		outs = append(outs, o)
	}
	group := func(name string, keep func(*fact) bool) {
		r := Row{Group: name}
		pages, paged := 0, 0
		for _, o := range outs {
			if !keep(o.f) {
				continue
			}
			r.Facts++
			if o.rank == 1 {
				r.RecallAt1++
			}
			if o.rank >= 1 && o.rank <= 5 {
				r.RecallAt5++
			}
			if o.exact {
				r.LoadExact++
			}
			if o.pages > 0 {
				pages += o.pages
				paged++
			}
		}
		if r.Facts == 0 {
			return
		}
		n := float64(r.Facts)
		r.RecallAt1, r.RecallAt5, r.LoadExact = round(r.RecallAt1/n), round(r.RecallAt5/n), round(r.LoadExact/n)
		if paged > 0 {
			r.Pages = round(float64(pages) / float64(paged))
		}
		rep.Rows = append(rep.Rows, r)
	}
	group("all", func(*fact) bool { return true })
	if cfg.Rounds > 0 {
		group(fmt.Sprintf("asked before (%d recall rounds)", cfg.Rounds), func(f *fact) bool { return f.rounds > 0 })
		group("asked first", func(f *fact) bool { return f.rounds == 0 })
	}
	group("hidden (current_hidden)", func(f *fact) bool { return f.hidden })
	group("other sessions", func(f *fact) bool { return !f.hidden })
	for _, k := range []string{"serial", "date", "asset"} {
		group(k, func(f *fact) bool { return f.kind == k })
	}
	var st1, lt, sc []time.Duration
	for _, o := range outs {
		st1 = append(st1, o.searchT)
		sc = append(sc, o.searchCPU)
		if o.load > 0 {
			lt = append(lt, o.load)
		}
	}
	rep.SearchP50Ms, rep.LoadP50Ms = p50ms(st1), p50ms(lt)
	rep.SearchP99Ms = pms(st1, 0.99)
	rep.SearchCPUP50Ms = pms(sc, 0.5)
	rep.Tokens, err = tokens(ctx, st.Store, cur, func() []string {
		var s []string
		for _, o := range outs {
			if o.f.hidden {
				s = append(s, o.recallTokens)
			}
		}
		return s
	}())
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// pagesTo pages the card's event in 4 KiB pages until value appears and
// returns the pages read.
func pagesTo(ctx context.Context, load runtime.Tool, cur store.SessionKey, c *recall.Card, value string) (int, error) {
	off := 0
	for page := 1; page <= 64; page++ {
		args, _ := json.Marshal(map[string]any{"session_id": c.Session, "event_id": c.EventID, "before": 0, "after": 0, "content_offset": off, "content_limit": 4096})
		out, err := load.Call(ctx, runtime.ToolRequest{Args: args, Session: cur})
		if err != nil {
			return 0, err
		}
		var w recall.Window
		if err := json.Unmarshal(out, &w); err != nil || len(w.Events) != 1 {
			return 0, fmt.Errorf("page %d of %s: %v", page, c.EventID, err)
		}
		if strings.Contains(w.Events[0].Content, value) {
			return page, nil
		}
		if w.Events[0].NextOffset == nil {
			return 0, nil
		}
		off = *w.Events[0].NextOffset
	}
	return 0, nil
}

// tokens counts the current session's history in full and projected, and
// the average tokens of one search and one load for a hidden fact.
func tokens(ctx context.Context, st store.Store, key store.SessionKey, recallTexts []string) (*Tokens, error) {
	c := history.CounterFor("gpt-4o-mini")
	events, _, err := runtime.LoadHistory(ctx, st, key, "", 0, "")
	if err != nil {
		return nil, err
	}
	full, _ := runtime.HistoryMessages(events)
	proj, err := history.Project(ctx, st, key, "", "", nil)
	if err != nil {
		return nil, err
	}
	t := &Tokens{Encoding: c.Encoding(), Full: c.Messages(full), Projected: c.Messages(proj.Messages)}
	for _, s := range recallTexts {
		t.RecallPerQuery += c.Count(s)
	}
	if len(recallTexts) > 0 {
		t.RecallPerQuery /= len(recallTexts)
	}
	if t.Full > 0 {
		t.Savings = round(1 - float64(t.Projected)/float64(t.Full))
		t.WithRecall = round(1 - float64(t.Projected+t.RecallPerQuery)/float64(t.Full))
	}
	return t, nil
}

func round(v float64) float64 { return float64(int(v*1000+0.5)) / 1000 }

func p50ms(ds []time.Duration) float64 { return pms(ds, 0.5) }

// pms is the q-quantile of ds in milliseconds (nearest rank).
func pms(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := min(len(ds)-1, int(q*float64(len(ds))))
	return round(float64(ds[i].Microseconds()) / 1000)
}

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "corpus: %d sessions x %d turns, %d events, %d tool results of %d KiB, %.1f MB ledger; index built in %.2fs (%s)\n",
		rep.Config.Sessions, rep.Config.Turns, rep.Corpus.Events, rep.Corpus.ToolResults, rep.Config.ToolBytes>>10,
		float64(rep.Corpus.LedgerBytes)/1e6, rep.Corpus.IndexSeconds, rep.Config.Store)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tfacts\trecall@1\trecall@5\tload exact\tpages (4 KiB)\t")
	for _, r := range rep.Rows {
		pages := "-"
		if r.Pages > 0 {
			pages = fmt.Sprintf("%.2f", r.Pages)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t\n", r.Group, r.Facts, r.RecallAt1, r.RecallAt5, r.LoadExact, pages)
	}
	tw.Flush()
	fmt.Fprintf(w, "warm latency: search p50 %.2f ms (CPU %.2f ms), p99 %.2f ms, load p50 %.2f ms; store reopened in %.1f ms, first search answered %.1f ms later (CPU %.1f ms)\n", rep.SearchP50Ms, rep.SearchCPUP50Ms, rep.SearchP99Ms, rep.LoadP50Ms, rep.OpenMs, rep.ReadyMs, rep.ReadyCPUMs)
	if t := rep.Tokens; t != nil {
		fmt.Fprintf(w, "tokens (%s, current session): full history %d, projected %d (%.1f%% saved); one search+load adds %d (%.1f%% saved with it)\n",
			t.Encoding, t.Full, t.Projected, 100*t.Savings, t.RecallPerQuery, 100*t.WithRecall)
	}
}
