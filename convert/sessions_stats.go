package convert

// sessions' counts: the writer that sums what the run view and the events
// say of each session, split by model, with its cost.

import (
	"slices"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/prices"
)

// sessionStats is the writer of readSession: it counts what the run view
// and the events say.
type sessionStats struct {
	s       *SessionInfo
	view    *formats.RunView
	p       *Pipeline
	dialect string
	prices  *prices.Table
	// The run's requests by model: their counts, and the estimate of
	// their cost from the price table.
	reqs     map[string]*formats.UsageInfo
	estimate map[string]float64
	order    []string
}

func (w *sessionStats) Write(e *formats.Event, _ *formats.RunView) error {
	s, v := w.s, w.view
	if w.dialect == "" && e.Source.Dialect != "" {
		w.dialect = e.Source.Dialect
	}
	switch e.Kind {
	case formats.RunStart:
		clear(w.reqs)
		clear(w.estimate)
		w.order = w.order[:0]
	case formats.ToolCall:
		s.ToolCalls++
	case formats.Usage:
		w.request(e)
	case formats.RunEnd:
		s.Runs++
		s.Prompts += v.Prompts
		s.Tokens = formats.Some(s.Tokens).Plus(v.Usage.InputTokens).Plus(v.Usage.OutputTokens).V
		w.runUsage()
		if s.Session == "" {
			s.Session = v.Info.SessionID
		}
		if s.Agent == "" {
			s.Agent = v.Info.AgentName
		}
		if s.Project == "" {
			s.Project = v.Info.Cwd
		}
		if s.Start.IsZero() || !v.Start.IsZero() && v.Start.Before(s.Start) {
			s.Start = v.Start
		}
		if v.Last.After(s.End) {
			s.End = v.Last
		}
		clear(w.reqs)
		clear(w.estimate)
		w.order = w.order[:0]
	}
	return nil
}

// request counts a model request under its model: the one that answered,
// else its agent's, else the run's.
func (w *sessionStats) request(e *formats.Event) {
	model := e.Response.Model
	if a := w.view.Agent(e.Agent); model == "" && a != nil {
		model = a.Model
	}
	if model == "" {
		model = w.view.Info.Model
	}
	if w.reqs == nil {
		w.reqs, w.estimate = map[string]*formats.UsageInfo{}, map[string]float64{}
	}
	u := w.reqs[model]
	if u == nil {
		u = &formats.UsageInfo{}
		w.reqs[model] = u
		w.order = append(w.order, model)
	}
	u.Add(e.Usage)
	if p, ok := w.prices.Lookup(model); ok {
		w.estimate[model] += p.Cost(e.Usage)
	}
}

// runUsage adds the run's totals to the session's, split by model: the
// requests' where the run's totals are their sums, else the run's model's.
// The cost is the source's where it gives one, else the estimate.
func (w *sessionStats) runUsage() {
	v, s := w.view, w.s
	for _, m := range v.Models {
		if !slices.Contains(s.Models, m) {
			s.Models = append(s.Models, m)
		}
	}
	add := func(model string, u Usage) {
		t := s.usageOf(model)
		if t == nil {
			s.byModel = append(s.byModel, modelUsage{model: model})
			t = &s.byModel[len(s.byModel)-1].Usage
		}
		t.add(u)
		s.Usage.add(u)
	}
	main := v.Info.Model
	if main == "" && len(v.Models) > 0 {
		main = v.Models[0]
	}
	total := v.Usage
	if total.Empty() {
		return
	}
	sourceCost := total.CostUSD.OK
	if !sameCounts(total, v.RequestUsage()) || len(w.order) == 0 {
		// The source's run totals, which its requests do not add up to.
		u := Usage{UsageInfo: total}
		if !sourceCost {
			u.CostUSD = formats.Opt[float64]{}
			if p, ok := w.prices.Lookup(main); ok {
				u.CostUSD, u.Estimated = formats.Some(p.CostOfTotals(total)), true
			} else if counted(total) {
				u.Unpriced = []string{orUnnamed(main)}
			}
		}
		add(main, u)
		return
	}
	for i, m := range w.order {
		u := Usage{UsageInfo: *w.reqs[m]}
		switch {
		case sourceCost && !u.CostUSD.OK:
			// The source's cost of the run, not split by request: the
			// run's first model carries it.
			u.CostUSD = formats.Opt[float64]{}
			if i == 0 {
				u.CostUSD = total.CostUSD
			}
		case sourceCost:
		default:
			u.CostUSD = formats.Opt[float64]{}
			if _, ok := w.prices.Lookup(m); ok {
				u.CostUSD, u.Estimated = formats.Some(w.estimate[m]), true
			} else if counted(u.UsageInfo) {
				u.Unpriced = []string{orUnnamed(m)}
			}
		}
		add(m, u)
	}
}

// sameCounts: a and b give the same token counts.
func sameCounts(a, b formats.UsageInfo) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.CacheReadTokens == b.CacheReadTokens &&
		a.CacheWriteTokens == b.CacheWriteTokens && a.ReasoningTokens == b.ReasoningTokens
}

// counted: some token was counted.
func counted(u formats.UsageInfo) bool {
	return u.InputTokens.V > 0 || u.OutputTokens.V > 0 || u.CacheReadTokens.V > 0 || u.CacheWriteTokens.V > 0
}

func orUnnamed(model string) string {
	if model == "" {
		return "(unnamed)"
	}
	return model
}

func (w *sessionStats) Close() error { return nil }
