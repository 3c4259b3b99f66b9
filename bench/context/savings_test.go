package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// tinySavings is a small savings experiment: short and long
// conversations, a small window so that the default trigger fires.
func tinySavings() savingsConfig {
	return savingsConfig{Lengths: []int{1, 6}, Conversations: 2, Long: 1, LongTokens: 12_000, Window: 8192,
		Seed: 3, Store: "memory", Model: "gpt-4o-mini", Workers: 2}
}

// Structural facts of the savings experiment that hold whatever the
// machine: every configuration's conversations complete, summaries are
// made only by configurations with a summary policy, compaction sends
// fewer tokens than full history on long sessions, and two runs with the
// same seed count the same.
func TestSavingsStructure(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the runtime over every configuration, twice")
	}
	ctx := context.Background()
	rep, err := savings(ctx, tinySavings())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 || rep.Rows[2].Length != "long" {
		t.Fatalf("rows = %+v", rep.Rows)
	}
	fig := func(r SavingsRow, name string) ConfigFigures {
		t.Helper()
		for _, f := range r.Configs {
			if f.Config == name {
				return f
			}
		}
		t.Fatalf("row %s has no configuration %s", r.Length, name)
		return ConfigFigures{}
	}
	for _, r := range rep.Rows {
		if len(r.Configs) != len(variants) {
			t.Fatalf("row %s: %d configurations, want %d", r.Length, len(r.Configs), len(variants))
		}
		for i, f := range r.Configs {
			v := variants[i]
			if f.Completed != r.Conversations {
				t.Errorf("row %s %s: %d of %d conversations completed", r.Length, f.Config, f.Completed, r.Conversations)
			}
			if f.ModelCalls < r.Runs || f.PromptTokens <= 0 {
				t.Errorf("row %s %s: %d model calls, %d prompt tokens for %d runs", r.Length, f.Config, f.ModelCalls, f.PromptTokens, r.Runs)
			}
			if v.Summary == "" && (f.SummaryCalls != 0 || f.SummaryPrompt != 0 || f.SummaryCompletion != 0) {
				t.Errorf("row %s %s: %d summary calls without a summary policy", r.Length, f.Config, f.SummaryCalls)
			}
			if f.CascadeCalls+f.SyncCalls > f.SummaryCalls || f.AfterLastRun > f.SummaryCalls {
				t.Errorf("row %s %s: %+v: summary call kinds exceed the calls", r.Length, f.Config, f)
			}
			if v.NoCascade && f.CascadeCalls != 0 {
				t.Errorf("row %s %s: %d cascade calls with the cascade off", r.Length, f.Config, f.CascadeCalls)
			}
			parts := 0
			for _, n := range f.LastRunProfile {
				parts += n
			}
			if parts != f.LastRunPrompt {
				t.Errorf("row %s %s: the last-run profile sums to %d, the last run sent %d", r.Length, f.Config, parts, f.LastRunPrompt)
			}
			if !strings.Contains(v.Name, "recall") && (f.RecallAsked != 0 || f.RecallFound != 0) {
				t.Errorf("row %s %s: recall without the recall tools", r.Length, f.Config)
			}
		}
		full := fig(r, "full")
		if full.Savings != 0 || full.Negative != 0 {
			t.Errorf("row %s: full history against itself: %+v", r.Length, full)
		}
	}
	long := rep.Rows[2]
	full, comp := fig(long, "full"), fig(long, "summary+compaction")
	// What the agent sends (a summary's own cost may exceed what it saves
	// on so short a "long" session over so small a window).
	if full.PromptTokens <= comp.PromptTokens {
		t.Errorf("long session: full history sends %d tokens, summary+compaction %d", full.PromptTokens, comp.PromptTokens)
	}
	if long.HistoryTokens < 12_000 {
		t.Errorf("long session history = %d tokens, want at least 12,000", long.HistoryTokens)
	}
	if every := fig(long, "every-2-turns"); every.SummaryCalls == 0 {
		t.Error("every-2-turns made no summary on a long session")
	}
	// Recall-backed elision: the summary+recall agent (session_load, no
	// compaction policy) sends less than without it, and its summarizer
	// reads less.
	if on, off := fig(long, "summary+recall"), fig(long, "summary+recall, no elision"); on.PromptTokens >= off.PromptTokens ||
		on.SummaryCalls > 0 && on.SummaryPrompt*off.SummaryCalls >= off.SummaryPrompt*on.SummaryCalls {
		t.Errorf("long session: summary+recall sends %d tokens (summarizer input %d in %d calls), without elision %d (%d in %d)",
			on.PromptTokens, on.SummaryPrompt, on.SummaryCalls, off.PromptTokens, off.SummaryPrompt, off.SummaryCalls)
	}
	if s := fig(long, "summary"); s.SummaryCalls == 0 {
		t.Error("the default trigger made no summary on a long session over an 8K window")
	}

	again, err := savings(ctx, tinySavings())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Rows, again.Rows) {
		t.Errorf("two runs with the same seed differ:\n%+v\n%+v", rep.Rows, again.Rows)
	}
}

// Bad flags are usage errors (exit 2), never panics.
func TestSavingsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-only", "nothing"}, {"-lengths", "1,x"}, {"-lengths", "0"}, {"-convs", "0"}, {"-window", "10"},
		{"-savings-store", "disk"}, {"-workers", "0"}, {"-long", "-1"},
	} {
		var out, errb strings.Builder
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}
