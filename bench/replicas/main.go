// Command replicas measures `agentc serve` replicas sharing one PostgreSQL
// store (spec/serve.md, "Replicas"): how long after a replica dies its runs
// are resumed by another (takeover latency), and the throughput of one
// replica against two on this machine.
//
//	go run ./bench/replicas [-pg URL] [-ttl 2s] [-rounds 5] [-runs 10] [-clients 16] [-requests 400] [-json FILE]
//
// The server is the real binary (built by the harness) in child processes,
// on a fresh schema of the database at -pg (default $AGENTC_TEST_POSTGRES),
// dropped at the end.
//
// Takeover: each round starts replica A beside a long-lived replica B,
// starts -runs runs on A (OpenAI requests) that each call a side effect and
// then wait in a slow tool, SIGKILLs A once every run waits, and times, per
// run, the kill → the resumed run's call of the slow tool on B; also
// reported: that time minus the time left on the run's lease at the kill
// (the detection and resume work after the lease expired).
//
// Throughput: a one-node workflow (a set node: a run is its input event,
// run record and two synced step commits) served by one replica, then by
// two on the same database, -clients concurrent OpenAI clients, each
// request a fresh session, interleaved rounds (1, 2, 1, 2).
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// takeoverFile is the takeover workflow, shared with the end-to-end test of
// replicas: a side effect, then a slow idempotent call, both http tools on
// MARK_URL.
const takeoverFile = "cmd/agentc/testdata/replicas.agent"

const tputSource = `workflow tput "Echoes"

state S { q: string, a: string = "" }

graph g(S) input q output a {
  node x = set { a = q }
  start -> x
  x -> end
}
`

// figure is one reported measurement.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Note  string  `json:"note,omitempty"`
}

func main() {
	pg := flag.String("pg", os.Getenv("AGENTC_TEST_POSTGRES"), "PostgreSQL URL (a fresh schema is made in it)")
	ttl := flag.Duration("ttl", 2*time.Second, "the replicas' lease TTL")
	rounds := flag.Int("rounds", 5, "takeover rounds (a replica killed per round)")
	runs := flag.Int("runs", 10, "runs in flight on the killed replica per round")
	clients := flag.Int("clients", 16, "concurrent clients for throughput")
	requests := flag.Int("requests", 400, "requests per throughput round")
	jsonOut := flag.String("json", "", "also write the JSON figures to this file")
	flag.Parse()
	if *pg == "" {
		fmt.Fprintln(os.Stderr, "bench: give -pg or AGENTC_TEST_POSTGRES (a postgres:// URL)")
		os.Exit(2)
	}
	figs, err := bench(*pg, *ttl, *rounds, *runs, *clients, *requests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tunit\tnote")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\n", f.Name, f.Value, f.Unit, f.Note)
	}
	tw.Flush()
	b, _ := json.MarshalIndent(figs, "", "  ")
	fmt.Println(string(b))
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// tools is the takeover workflow's tool server.
type tools struct {
	mu      sync.Mutex
	slows   map[string][]time.Time // run → arrivals of the slow call
	entered chan string
	release chan struct{}
}

func (x *tools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	run, _, _ := strings.Cut(r.Header.Get("Idempotency-Key"), ":")
	if r.URL.Path == "/slow" {
		x.mu.Lock()
		x.slows[run] = append(x.slows[run], time.Now())
		rel := x.release
		x.mu.Unlock()
		x.entered <- run
		select {
		case <-rel:
		case <-r.Context().Done():
			return
		}
	}
	io.WriteString(w, "ok")
}

func bench(pg string, ttl time.Duration, rounds, runs, clients, requests int) ([]figure, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentc-bench-replicas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "agentc")
	build := exec.Command("go", "build", "-o", bin, "./cmd/agentc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build agentc: %v\n%s", err, out)
	}
	takeover, err := os.ReadFile(filepath.Join(root, takeoverFile))
	if err != nil {
		return nil, err
	}
	for name, src := range map[string]string{"takeover.agent": string(takeover), "tput.agent": tputSource} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "agentc_bench_" + hex.EncodeToString(b[:])
	u, err := url.Parse(pg)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	target := u.String()
	defer func() {
		if conn, err := pgx.Connect(ctx, pg); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	}()

	tl := &tools{slows: map[string][]time.Time{}, entered: make(chan string, 1024)}
	ts := httptest.NewServer(tl)
	defer ts.Close()
	env := append(os.Environ(), "MARK_URL="+ts.URL, "AGENTC_ALLOW_HOSTS="+ts.Listener.Addr().String(),
		"AGENTC_STORE="+target, "AGENTC_LEASE_TTL="+ttl.String())
	env = slices.DeleteFunc(env, func(s string) bool { return strings.HasPrefix(s, "OPENAI_API_KEY=") })
	start := func(file string) (*exec.Cmd, string, error) {
		cmd := exec.Command(bin, "serve", file, "--addr", "127.0.0.1:0", "--token", "tok=u", "--log", "off", "--max-runs", "1024",
			"--data", filepath.Join(dir, "data-"+hex.EncodeToString(b[:2])+fmt.Sprint(time.Now().UnixNano())))
		cmd.Dir, cmd.Env = dir, env
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, "", err
		}
		if err := cmd.Start(); err != nil {
			return nil, "", err
		}
		addr := make(chan string, 1)
		go func() { // ends when the child's stderr closes
			sc := bufio.NewScanner(stderr)
			re := regexp.MustCompile(`on http://(\S+) \(`)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					addr <- m[1]
				}
			}
			close(addr)
		}()
		select {
		case a, ok := <-addr:
			if !ok {
				_ = cmd.Wait()
				return nil, "", fmt.Errorf("agentc serve %s exited at start", file)
			}
			return cmd, a, nil
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, "", fmt.Errorf("agentc serve %s did not start", file)
		}
	}
	stop := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	post := func(ctx context.Context, addr, model, session, text string) error {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Agentc-Session", session)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}

	// ---- takeover ----
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, err
	}
	bSrv, _, err := start("takeover.agent")
	if err != nil {
		return nil, err
	}
	defer stop(bSrv)
	var took, afterExpiry []time.Duration
	for round := range rounds {
		tl.mu.Lock()
		tl.release = make(chan struct{})
		tl.mu.Unlock()
		aSrv, aAddr, err := start("takeover.agent")
		if err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() { _ = post(ctx, aAddr, "replicas", fmt.Sprintf("t%d-%d", round, i), "go") })
		}
		inFlight := map[string]bool{}
		for len(inFlight) < runs {
			select {
			case run := <-tl.entered:
				inFlight[run] = true
			case <-time.After(time.Minute):
				_ = aSrv.Process.Kill()
				return nil, fmt.Errorf("round %d: only %d of %d runs reached the slow tool", round, len(inFlight), runs)
			}
		}
		// Each run's lease expiry, read before the kill: the lease of
		// its session, "session/" + store.DocPath(app, user, session).
		expires := map[string]time.Time{}
		rows, err := conn.Query(ctx, `SELECT r.id, l.expires FROM runs r JOIN leases l
			ON l.key = convert_to('session/', 'UTF8') || r.app || '\x0001'::bytea || r.usr || '\x0001'::bytea || r.session || '\x0001'::bytea
			WHERE r.status = 'running'`)
		if err != nil {
			return nil, fmt.Errorf("read leases: %w", err)
		}
		for rows.Next() {
			var id []byte
			var exp time.Time
			if err := rows.Scan(&id, &exp); err != nil {
				return nil, err
			}
			expires[string(id)] = exp
		}
		rows.Close()
		_ = aSrv.Process.Kill()
		_ = aSrv.Wait()
		killed := time.Now()
		tl.mu.Lock()
		close(tl.release)
		tl.mu.Unlock()
		resumed := 0
		deadline := time.After(10 * ttl)
		for resumed < runs {
			select {
			case run := <-tl.entered:
				if !inFlight[run] {
					continue
				}
				resumed++
				tl.mu.Lock()
				at := tl.slows[run][len(tl.slows[run])-1]
				tl.mu.Unlock()
				took = append(took, at.Sub(killed))
				if exp, ok := expires[run]; ok {
					if exp.Before(killed) {
						exp = killed
					}
					afterExpiry = append(afterExpiry, at.Sub(exp))
				}
			case <-deadline:
				return nil, fmt.Errorf("round %d: %d of %d runs resumed within %v of the kill", round, resumed, runs, 10*ttl)
			}
		}
		wg.Wait() // the clients of A saw their connections drop
	}
	stop(bSrv)

	// ---- throughput: 1 replica, then 2 ----
	c1, addr1, err := start("tput.agent")
	if err != nil {
		return nil, err
	}
	defer stop(c1)
	c2, addr2, err := start("tput.agent")
	if err != nil {
		return nil, err
	}
	defer stop(c2)
	var seq atomic.Int64
	load := func(addrs []string) (float64, error) {
		var next atomic.Int64
		var errs atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for c := range clients {
			wg.Go(func() {
				for next.Add(1) <= int64(requests) {
					s := seq.Add(1)
					if err := post(ctx, addrs[c%len(addrs)], "tput", fmt.Sprintf("p%d", s), "hi"); err != nil {
						errs.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := errs.Load(); n > 0 {
			return 0, fmt.Errorf("%d requests failed", n)
		}
		return float64(requests) / time.Since(t0).Seconds(), nil
	}
	if _, err := load([]string{addr1, addr2}); err != nil { // warm-up
		return nil, err
	}
	var one, two []float64
	for range 2 {
		r1, err := load([]string{addr1})
		if err != nil {
			return nil, err
		}
		r2, err := load([]string{addr1, addr2})
		if err != nil {
			return nil, err
		}
		one, two = append(one, r1), append(two, r2)
	}

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	quant := func(s []time.Duration, p float64) time.Duration {
		s = slices.Clone(s)
		slices.Sort(s)
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	mean := func(v []float64) float64 {
		t := 0.0
		for _, x := range v {
			t += x
		}
		return t / float64(len(v))
	}
	note := fmt.Sprintf("lease TTL %v, %d runs × %d rounds", ttl, runs, rounds)
	return []figure{
		{Name: "takeover p50 (kill → resumed on another replica)", Value: ms(quant(took, 0.5)), Unit: "ms", Note: note},
		{Name: "takeover p99", Value: ms(quant(took, 0.99)), Unit: "ms", Note: fmt.Sprintf("bound 2× TTL = %v", 2*ttl)},
		{Name: "takeover after the lease expired, p50", Value: ms(quant(afterExpiry, 0.5)), Unit: "ms", Note: "detection + resume"},
		{Name: "takeover after the lease expired, p99", Value: ms(quant(afterExpiry, 0.99)), Unit: "ms"},
		{Name: "throughput, 1 replica", Value: mean(one), Unit: "req/s", Note: fmt.Sprintf("%d clients, set-node run, fresh session each", clients)},
		{Name: "throughput, 2 replicas", Value: mean(two), Unit: "req/s", Note: fmt.Sprintf("%.2f× one replica", mean(two)/mean(one))},
	}, nil
}

// moduleRoot is the nearest folder holding go.mod, from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory: run the harness inside the module")
		}
		dir = up
	}
}
