// Package prices estimates what a model request cost from its token counts,
// with a table of the models' prices kept as data (prices.tsv, embedded),
// for the sessions whose files give no cost.
package prices

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentconv/agentconv/formats"
)

//go:embed prices.tsv
var table string

// Rates are the prices of a model's tokens in US dollars per million;
// a rate not given is -1.
type Rates struct {
	Input, Output, CacheRead, CacheWrite5m, CacheWrite1h float64
}

// Price is one model's row.
type Price struct {
	Model string
	Rates
	// Above: a request of more input tokens than this (cache reads and
	// writes included) is priced at Long; 0 when the model has one price.
	Above int64
	Long  Rates
}

// Table is a price table.
type Table struct {
	// Date and Source are what the table's file says of itself.
	Date, Source string
	models       map[string]*Price
	names        []string // longest first, for the prefix match
}

var (
	defaultOnce  sync.Once
	defaultTable *Table
)

// Default is the table kept in the repository (prices.tsv). A broken
// table is a bug of the build: TestDefault reads it.
func Default() *Table {
	defaultOnce.Do(func() {
		t, err := Parse(strings.NewReader(table), "prices/prices.tsv")
		if err != nil {
			panic(err)
		}
		defaultTable = t
	})
	return defaultTable
}

var columns = []string{"model", "input", "output", "cache_read", "cache_write_5m", "cache_write_1h",
	"above", "input_above", "output_above", "cache_read_above", "cache_write_5m_above", "cache_write_1h_above"}

// Parse reads a table: lines of tab-separated cells under a header line
// naming the columns; '#' starts a comment line, whose "date:" and
// "source:" lines say what the table is (the source goes on to the next
// empty comment line). name is the file's, for errors.
func Parse(r io.Reader, name string) (*Table, error) {
	t := &Table{models: map[string]*Price{}}
	sc := bufio.NewScanner(r)
	line, header, inSource := 0, false, false
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(text, "#") {
			c := strings.TrimSpace(strings.TrimPrefix(text, "#"))
			switch {
			case strings.HasPrefix(c, "date:"):
				t.Date, inSource = strings.TrimSpace(strings.TrimPrefix(c, "date:")), false
			case strings.HasPrefix(c, "source:"):
				t.Source, inSource = strings.TrimSpace(strings.TrimPrefix(c, "source:")), true
			case inSource && c != "":
				t.Source += " " + c
			default:
				inSource = false
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		cells := strings.Split(text, "\t")
		if !header {
			if strings.Join(cells, "\t") != strings.Join(columns, "\t") {
				return nil, bad("the header must name the columns %s, tab-separated", strings.Join(columns, ", "))
			}
			header = true
			continue
		}
		if len(cells) != len(columns) {
			return nil, bad("%d cells, want %d (%s): give an empty cell for a price not known", len(cells), len(columns), strings.Join(columns, ", "))
		}
		p := &Price{Model: strings.ToLower(strings.TrimSpace(cells[0]))}
		if p.Model == "" {
			return nil, bad("no model name in the first cell")
		}
		if t.models[p.Model] != nil {
			return nil, bad("model %q comes twice", p.Model)
		}
		var nums [11]float64
		for i, c := range cells[1:] {
			nums[i] = -1
			if c = strings.TrimSpace(c); c == "" {
				continue
			}
			v, err := strconv.ParseFloat(c, 64)
			if err != nil || v < 0 {
				return nil, bad("column %s of %s: %q is not a price (a number of dollars, 0 or more)", columns[i+1], p.Model, c)
			}
			nums[i] = v
		}
		if nums[0] < 0 || nums[1] < 0 {
			return nil, bad("%s has no input or output price: both are needed", p.Model)
		}
		p.Rates = Rates{nums[0], nums[1], nums[2], nums[3], nums[4]}
		if nums[5] >= 0 {
			p.Above = int64(nums[5])
			p.Long = Rates{nums[6], nums[7], nums[8], nums[9], nums[10]}
			if p.Long.Input < 0 || p.Long.Output < 0 {
				return nil, bad("%s gives a threshold (above) without input_above and output_above", p.Model)
			}
		}
		t.models[p.Model] = p
		t.names = append(t.names, p.Model)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: no header line naming the columns (%s)", name, strings.Join(columns, ", "))
	}
	if t.Date == "" || t.Source == "" {
		return nil, fmt.Errorf("%s: say the table's date and source in comment lines (# date: ..., # source: ...)", name)
	}
	sort.SliceStable(t.names, func(i, j int) bool { return len(t.names[i]) > len(t.names[j]) })
	return t, nil
}

var dated = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Lookup finds a model's price: by its name, lower-cased and without a
// provider's prefix (anthropic/, models/, us.anthropic.) or a version
// suffix (-v1:0, @eu); else without a date at its end; else the longest
// name of the table that it starts with, followed by a dash.
func (t *Table) Lookup(model string) (*Price, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, '@'); i > 0 {
		m = m[:i]
	}
	if i := strings.Index(m, "claude-"); i > 0 {
		m = m[i:] // us.anthropic.claude-…, anthropic.claude-…
	}
	if i := strings.LastIndex(m, "-v"); i > 0 && strings.Contains(m[i:], ":") {
		m = m[:i]
	}
	if p := t.models[m]; p != nil {
		return p, true
	}
	if d := dated.ReplaceAllString(m, ""); d != m {
		if p := t.models[d]; p != nil {
			return p, true
		}
	}
	for _, n := range t.names {
		if strings.HasPrefix(m, n+"-") {
			return t.models[n], true
		}
	}
	return nil, false
}

// Cost is the estimate of one request's cost in US dollars, from its
// counts (which have the meanings of formats.UsageInfo: the input counts
// the cache reads and writes too).
func (p *Price) Cost(u formats.UsageInfo) float64 {
	r := p.Rates
	if p.Above > 0 && u.InputTokens.V > p.Above {
		r = p.Long
	}
	or := func(v, instead float64) float64 {
		if v < 0 {
			return instead
		}
		return v
	}
	read, write := u.CacheReadTokens.V, u.CacheWriteTokens.V
	hour := min(u.CacheWrite1hTokens.V, write)
	fresh := max(u.InputTokens.V-read-write, 0)
	w5 := or(r.CacheWrite5m, r.Input)
	cost := float64(fresh)*r.Input + float64(read)*or(r.CacheRead, r.Input) +
		float64(write-hour)*w5 + float64(hour)*or(r.CacheWrite1h, w5) + float64(u.OutputTokens.V)*r.Output
	return cost / 1e6
}

// CostOfTotals is the estimate for the totals of many requests, which
// cannot tell whether one of them passed the threshold: the base prices.
func (p *Price) CostOfTotals(u formats.UsageInfo) float64 {
	q := *p
	q.Above = 0
	return q.Cost(u)
}
