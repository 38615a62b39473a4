package convert

// sessions' output: the table, its totals and the cost's note, --by
// groups, and the helpers of its columns and filters.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/prices"
	"github.com/goccy/go-json"
)

// printSessions writes the table, and the totals under it.
func printSessions(out io.Writer, list []SessionInfo, home string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tPROJECT\tSTART\tPROMPTS\tTOOL CALLS\t"+usageHeader+"\tSIZE")
	var total Usage
	var bytes int64
	for _, s := range list {
		start := "-"
		if !s.Start.IsZero() {
			start = s.Start.Local().Format("2006-01-02 15:04")
		}
		// The id and the project are the input's words: shown, not obeyed.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", formats.Visible(s.Agent, false), orDash(formats.Visible(s.Session, false)),
			orDash(formats.Visible(tildeHome(s.Project, home), false)),
			start, s.Prompts, s.ToolCalls, usageCells(s.Usage), humanBytes(s.Bytes))
		total.add(s.Usage)
		bytes += s.Bytes
	}
	fmt.Fprintf(tw, "TOTAL\t%d %s\t\t\t\t\t%s\t%s\n", len(list), plural(len(list), "session", "sessions"), usageCells(total), humanBytes(bytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	return costNote(out, total)
}

func usageCells(u Usage) string {
	n := func(o formats.Opt[int64]) string {
		if !o.OK {
			return "-"
		}
		return strconv.FormatInt(o.V, 10)
	}
	cost := "-"
	if u.CostUSD.OK {
		cost = strconv.FormatFloat(u.CostUSD.V, 'f', 4, 64)
	}
	return strings.Join([]string{n(u.InputTokens), n(u.CacheReadTokens), n(u.CacheWriteTokens), n(u.OutputTokens),
		n(u.ReasoningTokens), cost, orDash(u.costFrom())}, "\t")
}

// costNote says under a table what an estimate is, and which models have
// no price.
func costNote(out io.Writer, total Usage) error {
	var b strings.Builder
	if total.Estimated {
		t := prices.Default()
		fmt.Fprintf(&b, "\nCOST FROM estimate: where the files give no cost, the tokens are priced with agentconv's table of %s; its source: %s\n", t.Date, t.Source)
	}
	if len(total.Unpriced) > 0 {
		fmt.Fprintf(&b, "No price for %s: the cost leaves out %s tokens.\n",
			formats.Visible(strings.Join(total.Unpriced, ", "), false), plural(len(total.Unpriced), "its", "their"))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// startOf is the session's start in local time, or its file's time.
func startOf(s *SessionInfo) time.Time {
	if s.Start.IsZero() {
		return s.modified.Local()
	}
	return s.Start.Local()
}

// Group is one row of --by: the sessions of one day, week, month, model
// or project, and their counts and cost.
type Group struct {
	Key      string
	Sessions int
	Usage
}

// groupSessions sums the sessions by key; a session of several models
// counts in each model's group with that model's part. The last group is
// the totals, whose Key is "".
func groupSessions(list []SessionInfo, by string) []Group {
	keyOf := groupBy[by]
	byKey := map[string]*Group{}
	total := Group{}
	for i := range list {
		s := &list[i]
		total.Sessions++
		total.Usage.add(s.Usage)
		for _, k := range keyOf(s) {
			g := byKey[k]
			if g == nil {
				g = &Group{Key: k}
				byKey[k] = g
			}
			g.Sessions++
			if by == "model" {
				if u := s.usageOf(k); u != nil {
					g.Usage.add(*u)
				} else if u := s.usageOf(""); k == orUnnamed("") && u != nil {
					g.Usage.add(*u)
				}
				continue
			}
			g.Usage.add(s.Usage)
		}
	}
	out := make([]Group, 0, len(byKey)+1)
	for _, g := range byKey {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return append(out, total)
}

// printGroups writes the table of --by.
func printGroups(out io.Writer, groups []Group, by, home string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := strings.ToUpper(by)
	if by == "week" {
		head = "WEEK OF"
	}
	fmt.Fprintf(tw, "%s\tSESSIONS\t%s\n", head, usageHeader)
	for _, g := range groups {
		key := formats.Visible(g.Key, false)
		if by == "project" {
			key = formats.Visible(tildeHome(g.Key, home), false)
		}
		if g.Key == "" {
			key = "TOTAL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", key, g.Sessions, usageCells(g.Usage))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return costNote(out, groups[len(groups)-1].Usage)
}

// marshal writes a group as --by --json gives it: its key under the
// name of --by, or "total": true for the totals.
func (g Group) marshal(by string) ([]byte, error) {
	var b []byte
	if g.Key == "" {
		b = []byte(`{"total":true`)
	} else {
		k, err := json.Marshal(g.Key)
		if err != nil {
			return nil, err
		}
		b = append(append(append([]byte(`{"`), by...), `":`...), k...)
	}
	rest, err := json.Marshal(struct {
		Sessions int `json:"sessions"`
		usageJSON
	}{g.Sessions, g.Usage.json()})
	if err != nil {
		return nil, err
	}
	return append(append(b, ','), rest[1:]...), nil
}

func orNone(s string) string {
	if s == "" {
		return "(none yet: no dialect names one)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tildeHome(p, home string) string {
	if home != "" && (p == home || strings.HasPrefix(p, home+string(filepath.Separator))) {
		return "~" + p[len(home):]
	}
	return p
}

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return home + p[1:]
	}
	return p
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// agentMatches: the agent's name, or its first word, or the dialect's
// name or its first word, is name.
func agentMatches(name string, s SessionInfo) bool {
	for _, have := range []string{strings.ToLower(s.Agent), s.Dialect} {
		if have == name || strings.HasPrefix(have, name) && strings.ContainsRune("-_. ", rune(have[len(name)])) {
			return true
		}
	}
	return false
}

// underDir: path is dir or under it.
func underDir(path, dir string) bool {
	if path == "" {
		return false
	}
	path = filepath.Clean(path)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// parseSince reads --since: a time ago (a Go duration, or Nd / Nw) or a
// date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		if v, err := strconv.ParseFloat(s[:n-1], 64); err == nil && v >= 0 && v <= 100000 {
			day := 24 * time.Hour
			if s[n-1] == 'w' {
				day *= 7
			}
			return now.Add(-time.Duration(v * float64(day))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("give a time ago (7d, 24h, 90m, 2w) or a date (2026-11-24, 2026-11-24T09:00:00Z)")
}
