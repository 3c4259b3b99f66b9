package assemble

// Retention (spec/storage.md, "Retention"): the retention: section of
// agentc.yaml, the Retainer that knows what every service and protocol
// keeps beside the ledger, and the server's periodic pass.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/store"
)

// yamlPolicy is one policy of the retention: section; "" (or an absent
// max_runs) leaves the field to the section's default.
type yamlPolicy struct {
	MaxAge         string `yaml:"max_age"`
	MaxRuns        *int   `yaml:"max_runs"`
	SessionTTL     string `yaml:"session_ttl"`
	IdempotencyTTL string `yaml:"idempotency_ttl"`
}

// yamlRetention is the retention: section of agentc.yaml.
type yamlRetention struct {
	yamlPolicy `yaml:",inline"`
	Interval   string                `yaml:"interval"`
	Apps       map[string]yamlPolicy `yaml:"apps"`
}

// RetentionSettings are the retention policies of a project: a default,
// per-app overrides, and how often agentc serve applies its app's.
type RetentionSettings struct {
	Default retention.Policy
	Apps    map[string]retention.Policy
	// Interval is the time between the server's passes (0: it makes none).
	Interval time.Duration
}

// DefaultRetentionInterval is how often agentc serve applies a policy when
// agentc.yaml does not say.
const DefaultRetentionInterval = time.Hour

// Policy is app's policy: its override, else the default.
func (s RetentionSettings) Policy(app string) retention.Policy {
	if p, ok := s.Apps[app]; ok {
		return p
	}
	return s.Default
}

// ReadRetention reads the retention: section of root/agentc.yaml (none:
// keep everything).
func ReadRetention(root string) (RetentionSettings, error) {
	y, err := readProjectYAML(root)
	if err != nil {
		return RetentionSettings{}, err
	}
	return y.Retention.settings()
}

func (y yamlRetention) settings() (RetentionSettings, error) {
	var s RetentionSettings
	var err error
	if s.Default, err = y.yamlPolicy.apply(retention.Policy{}); err != nil {
		return s, fmt.Errorf("agentc.yaml: retention: %w", err)
	}
	for app, p := range y.Apps {
		if s.Apps == nil {
			s.Apps = map[string]retention.Policy{}
		}
		if s.Apps[app], err = p.apply(s.Default); err != nil {
			return s, fmt.Errorf("agentc.yaml: retention: apps: %s: %w", app, err)
		}
	}
	switch iv := strings.TrimSpace(y.Interval); iv {
	case "":
		s.Interval = DefaultRetentionInterval
	case "off":
	default:
		if s.Interval, err = retention.ParseAge(iv); err != nil {
			return s, fmt.Errorf("agentc.yaml: retention: interval: %w", err)
		}
	}
	return s, nil
}

// apply returns base with the fields y sets.
func (y yamlPolicy) apply(base retention.Policy) (retention.Policy, error) {
	for _, f := range []struct {
		name string
		v    string
		to   *time.Duration
	}{{"max_age", y.MaxAge, &base.MaxAge}, {"session_ttl", y.SessionTTL, &base.SessionTTL}, {"idempotency_ttl", y.IdempotencyTTL, &base.IdempotencyTTL}} {
		if f.v == "" {
			continue
		}
		d, err := retention.ParseAge(f.v)
		if err != nil {
			return base, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.to = d
	}
	if y.MaxRuns != nil {
		if *y.MaxRuns < 0 {
			return base, fmt.Errorf("max_runs: %d is negative", *y.MaxRuns)
		}
		base.MaxRuns = *y.MaxRuns
	}
	return base, nil
}

// NewRetainer returns a Retainer over st that also deletes what agentc's
// services and protocols keep about what it deletes: a deleted session's
// artifacts, memory extraction cursor and recall postings; the AG-UI runId,
// A2A messageId, OpenAI Idempotency-Key and handed-out tool call records; a deleted run's A2A
// task record and its list entry.
func NewRetainer(st store.Store, now func() time.Time) *retention.Retainer {
	return retention.New(retention.Config{
		Store: st, Now: now,
		SessionDocs: []string{artifact.Coll, memory.CollCursors},
		Forget: []func(context.Context, store.SessionKey) error{
			func(ctx context.Context, k store.SessionKey) error { return recall.Forget(ctx, st, k) },
		},
		Records: []retention.Records{
			{Coll: openai.CollIdempotency, Read: func(v []byte) (retention.Ref, error) {
				run, made, err := openai.IdempotencyRecord(v)
				return retention.Ref{Run: run, Made: made}, err
			}},
			{Coll: openai.CollToolCalls, Read: func(v []byte) (retention.Ref, error) {
				run, err := openai.ToolCallRecord(v)
				return retention.Ref{Run: run}, err
			}},
			{Coll: agui.CollRuns, Read: func(v []byte) (retention.Ref, error) {
				run, err := agui.RecordRun(v)
				return retention.Ref{Run: run}, err
			}},
			{Coll: a2a.CollMessage, Read: func(v []byte) (retention.Ref, error) { return retention.Ref{Task: a2a.MessageRecord(v)}, nil }},
			// A task record goes with its run, and its list entry and its
			// run's entry with it.
			{Coll: a2a.CollTask, Owned: true, Read: func(v []byte) (retention.Ref, error) {
				run, index, err := a2a.TaskRecord(v)
				ref := retention.Ref{Run: run}
				if index != "" {
					ref.With = []retention.DocKey{{Coll: a2a.CollRecent, Key: index}}
				}
				if run != "" {
					ref.With = append(ref.With, retention.DocKey{Coll: a2a.CollRunTask, Key: run})
				}
				return ref, err
			}},
		},
	})
}

// Apps returns the apps that have sessions in st, in order: one read per
// app.
func Apps(ctx context.Context, st store.Sessions) ([]string, error) {
	var apps []string
	f := store.SessionFilter{Limit: 1}
	for {
		ss, _, err := st.ListSessions(ctx, f)
		if err != nil || len(ss) == 0 {
			return apps, err
		}
		app := ss[0].Key.App
		apps = append(apps, app)
		// After every session of app: app+"\x00" sorts after app and
		// before every longer app name, and its empty user and session
		// before any session of its own.
		f.Cursor = store.SessionCursor(store.SessionKey{App: app + "\x00"})
	}
}

// StartRetention applies app's policy to st now and then every
// set.Interval, in a goroutine it owns, logging each pass that deleted
// something or failed and counting what it deleted in m. stop ends the
// goroutine and waits for it (a server's closer: it runs before the store
// is closed). Nothing starts when the policy is zero or the interval is.
func StartRetention(st store.Store, app string, set RetentionSettings, now func() time.Time, log *slog.Logger, m *server.Metrics) (stop func(context.Context) error) {
	p := set.Policy(app)
	if p.IsZero() || set.Interval <= 0 {
		return func(context.Context) error { return nil }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := NewRetainer(st, now)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		r.Loop(ctx, app, p, set.Interval, func(res retention.Result, err error) {
			for _, k := range []retention.Kind{retention.KindRun, retention.KindSession, retention.KindIdempotency, retention.KindRecord} {
				m.Retained(app, string(k), res.Count(k))
			}
			if err != nil {
				m.RetentionFailed(app)
				log.Error("retention", "app", app, "policy", p.String(), "deleted", len(res.Deleted), "err", err)
				return
			}
			if len(res.Deleted) > 0 || len(res.Skipped) > 0 {
				log.Info("retention", "app", app, "policy", p.String(), "runs", res.Count(retention.KindRun),
					"sessions", res.Count(retention.KindSession), "idempotency", res.Count(retention.KindIdempotency),
					"records", res.Count(retention.KindRecord), "skipped", len(res.Skipped))
			}
		})
	})
	return func(context.Context) error {
		cancel()
		wg.Wait()
		return nil
	}
}

// PlanRetention plans the retention of app in st, or, when app is "", of
// every app that has sessions there, each under its policy in set. The
// plans are in app order; apply them with the returned Retainer.
func PlanRetention(ctx context.Context, st store.Store, set RetentionSettings, app string, now func() time.Time) (*retention.Retainer, []*retention.Plan, error) {
	apps := []string{app}
	if app == "" {
		var err error
		if apps, err = Apps(ctx, st); err != nil {
			return nil, nil, fmt.Errorf("retention: list apps: %w", err)
		}
	}
	r := NewRetainer(st, now)
	plans := make([]*retention.Plan, 0, len(apps))
	for _, a := range apps {
		pl, err := r.Plan(ctx, a, set.Policy(a))
		if err != nil {
			return nil, nil, err
		}
		plans = append(plans, pl)
	}
	return r, plans, nil
}

// Prune is agentc prune: it plans the retention of app (PlanRetention) and
// applies each plan in app order, unless dryRun, calling report with the
// plan and its report as each app is done. The error is the planning's,
// else the applications' joined.
func Prune(ctx context.Context, st store.Store, set RetentionSettings, app string, now func() time.Time, dryRun bool, report func(*retention.Plan, retention.Report)) error {
	r, plans, err := PlanRetention(ctx, st, set, app, now)
	if err != nil {
		return err
	}
	var errs []error
	for _, pl := range plans {
		var res retention.Result
		var err error
		if !dryRun {
			if res, err = r.Apply(ctx, pl); err != nil {
				errs = append(errs, err)
			}
		}
		report(pl, retention.NewReport(pl, res, dryRun, err))
	}
	return errors.Join(errs...)
}
