package formatstest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

// rules lists the rules of the problems, in order, once each.
func rules(ps []Problem) string {
	var out []string
	for _, p := range ps {
		if len(out) == 0 || out[len(out)-1] != p.Rule {
			out = append(out, p.Rule)
		}
	}
	return strings.Join(out, " ")
}

func TestCheckReaderKeepsEveryKind(t *testing.T) {
	d := formats.Dialect{Name: "test"}
	evs := EveryKind()
	for _, e := range evs {
		e.Source.Dialect = "test"
	}
	if ps := CheckReader(d, evs); len(ps) > 0 {
		t.Errorf("EveryKind breaks the reader's rules: %v", ps)
	}
}

func TestCheckReaderFindsBreaches(t *testing.T) {
	src := func(line string) formats.Source {
		s := formats.Source{Dialect: "test"}
		if line != "" {
			s.Line = []byte(line)
		}
		return s
	}
	made := formats.Source{Dialect: "test", Made: true}
	cont := formats.Source{Dialect: "test", Continued: true}
	u := formats.UsageInfo{InputTokens: formats.Some[int64](1)}
	// A run whose second request's only output is a call that ends so,
	// without its usage.
	lastCallEnds := func(st formats.Status) []*formats.Event {
		return []*formats.Event{
			{Kind: formats.RunStart, Source: made},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "c"}, Source: made}, {Kind: formats.Usage, Usage: u, Source: made},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c"}, Source: made},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "d"}, Source: made},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "d", Status: st}, Source: made},
			{Kind: formats.RunEnd, Source: made}}
	}
	for _, c := range []struct {
		name string
		evs  []*formats.Event
		want string
	}{
		{"continued before any record", []*formats.Event{
			{Kind: formats.RunStart, Source: cont}, {Kind: formats.Message, Source: src("{}")}}, "continued"},
		{"an event of a record reader that says nothing", []*formats.Event{
			{Kind: formats.RunStart, Source: src("{}")}, {Kind: formats.RunEnd, Source: src("")}}, "made"},
		{"another dialect", []*formats.Event{{Kind: formats.RunStart, Source: formats.Source{Dialect: "other"}}}, "source"},
		{"synthetic", []*formats.Event{{Kind: formats.RunStart, Source: made, Synthetic: true}}, "synthetic"},
		{"after the end", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.RunEnd, Source: made}, {Kind: formats.Message, Source: made}}, "runs"},
		{"result without call", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.ToolResult, Call: formats.Call{ID: "c"}, Source: made}}, "calls"},
		{"subagent before its start", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.Message, Agent: "a", Source: made}}, "agents"},
		{"usage after its call's result", []*formats.Event{
			{Kind: formats.RunStart, Source: made},
			{Kind: formats.Message, Source: made}, {Kind: formats.ToolCall, Call: formats.Call{ID: "c"}, Source: made},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c"}, Source: made}, {Kind: formats.Usage, Usage: u, Source: made},
			{Kind: formats.Message, Source: made}, {Kind: formats.Usage, Usage: u, Source: made},
			{Kind: formats.RunEnd, Source: made}}, "usage"},
		{"the last request's usage dropped", []*formats.Event{
			{Kind: formats.RunStart, Source: made},
			{Kind: formats.ToolCall, Call: formats.Call{ID: "c"}, Source: made}, {Kind: formats.Usage, Usage: u, Source: made},
			{Kind: formats.ToolResult, Call: formats.Call{ID: "c"}, Source: made}, {Kind: formats.Message, Source: made},
			{Kind: formats.RunEnd, Source: made}}, "usage"},
		{"a usage with no output of its request", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.UserMessage, Source: made},
			{Kind: formats.Usage, Usage: u, Source: made}, {Kind: formats.RunEnd, Source: made}}, "usage"},
		{"a usage whose request's output the source did not record", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.UserMessage, Source: made},
			{Kind: formats.Usage, Usage: u, Unrecorded: true, Source: made}, {Kind: formats.RunEnd, Source: made}}, ""},
		{"a request whose only call failed, without usage", lastCallEnds(formats.Failed), "usage"},
		{"a request whose only call was refused needs no usage", lastCallEnds(formats.Denied), ""},
		{"negative count", []*formats.Event{
			{Kind: formats.RunStart, Source: made}, {Kind: formats.RunEnd, Source: made, Usage: formats.UsageInfo{OutputTokens: formats.Some[int64](-1)}}}, "counts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := CheckReader(formats.Dialect{Name: "test"}, c.evs)
			if got := rules(ps); got != c.want {
				t.Errorf("rules broken: %q, want %q (%v)", got, c.want, ps)
			}
		})
	}
}

// lossy reports a loss that its row does not declare, and writes nothing.
type lossy struct{ rep *formats.Report }

var lossyTodos = formats.NewQuirk("todo lists as the test writer drops them")

func (l lossy) Write(e *formats.Event, _ *formats.RunView) error {
	if e.Kind == formats.Todos {
		l.rep.Quirk(lossyTodos)
	}
	return nil
}
func (l lossy) Close() error { return nil }

func TestCheckWriterFindsUndeclaredLosses(t *testing.T) {
	d := formats.Dialect{Name: "lossy", NewWriter: func(w io.Writer, o formats.WriteOptions) formats.Writer { return lossy{o.Report} }}
	if got := rules(CheckWriter(d, EveryKind())); got != "losses" {
		t.Errorf("rules broken: %q, want losses", got)
	}
	d.Quirks = []formats.Quirk{lossyTodos}
	if ps := CheckWriter(d, EveryKind()); len(ps) > 0 {
		t.Errorf("a declared loss: %v", ps)
	}
}

// TestCheckWriterReadsBack: a writer whose output its own reader cannot
// read fails the read back.
func TestCheckWriterReadsBack(t *testing.T) {
	d := formats.Dialect{Name: "bad",
		NewWriter: func(w io.Writer, o formats.WriteOptions) formats.Writer { return badWriter{w} },
		NewReader: func(r io.Reader, o formats.ReadOptions) formats.Reader { return badReader{r} }}
	if got := rules(CheckWriter(d, EveryKind())); got != "read back" {
		t.Errorf("rules broken: %q, want read back", got)
	}
}

type badWriter struct{ w io.Writer }

func (b badWriter) Write(e *formats.Event, _ *formats.RunView) error {
	_, err := io.WriteString(b.w, "x\n")
	return err
}
func (b badWriter) Close() error { return nil }

type badReader struct{ r io.Reader }

func (b badReader) Next() (*formats.Event, error) {
	var one [1]byte
	if _, err := b.r.Read(one[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(one[:], []byte{'x'}) {
		return nil, io.EOF
	}
	return nil, formats.Errorf(1, "not a record")
}

// TestLastRunOpen: the "eof" rule's view of a stream's end. A run opens at
// a RunStart, or at any event but Raw outside a run (the pipeline opens
// one there), and a subagent's events neither open nor end one.
func TestLastRunOpen(t *testing.T) {
	ev := func(k formats.Kind, agent string) *formats.Event { return &formats.Event{Kind: k, Agent: agent} }
	for _, c := range []struct {
		name string
		evs  []*formats.Event
		want int
	}{
		{"none", nil, -1},
		{"ended", []*formats.Event{ev(formats.RunStart, ""), ev(formats.Message, ""), ev(formats.RunEnd, "")}, -1},
		{"not ended", []*formats.Event{ev(formats.RunStart, ""), ev(formats.Message, "")}, 0},
		{"second not ended", []*formats.Event{ev(formats.RunStart, ""), ev(formats.RunEnd, ""), ev(formats.RunStart, ""), ev(formats.ToolCall, "")}, 2},
		{"raw after the end", []*formats.Event{ev(formats.RunStart, ""), ev(formats.RunEnd, ""), ev(formats.Raw, "")}, -1},
		{"no RunStart", []*formats.Event{ev(formats.Raw, ""), ev(formats.ToolCall, ""), ev(formats.ToolResult, "")}, 1},
		{"after the end, no RunStart", []*formats.Event{ev(formats.RunStart, ""), ev(formats.RunEnd, ""), ev(formats.Message, "")}, 2},
		{"a subagent's end", []*formats.Event{ev(formats.RunStart, ""), ev(formats.AgentStart, "a1"), ev(formats.RunEnd, "a1")}, 0},
	} {
		if got := lastRunOpen(c.evs); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCheckFiguresFindsBreaches(t *testing.T) {
	whole := []*formats.Event{
		{Kind: formats.ToolResult, Call: formats.Call{ID: "a", Status: formats.Completed, Output: formats.TextOutput("listing")}},
		{Kind: formats.ToolResult, Call: formats.Call{ID: "b", Status: formats.Failed, Output: formats.TextOutput("denied")}},
	}
	figures := func(change func([]*formats.Event)) []*formats.Event {
		var out []*formats.Event
		for _, e := range whole {
			c := *e
			out = append(out, &c)
		}
		change(out)
		return out
	}
	if ps := CheckFigures(whole, figures(func(evs []*formats.Event) { evs[0].Call.Output = formats.TextOutput("") })); len(ps) != 0 {
		t.Errorf("a successful call's output left out: %v", ps)
	}
	for name, change := range map[string]func([]*formats.Event){
		"a failed call's output left out":    func(evs []*formats.Event) { evs[1].Call.Output = formats.TextOutput("") },
		"a successful call's output changed": func(evs []*formats.Event) { evs[0].Call.Output = formats.TextOutput("other") },
		"a status changed":                   func(evs []*formats.Event) { evs[1].Call.Status = formats.Completed },
		"an exit code lost":                  func(evs []*formats.Event) { evs[1].Call.ExitCode = formats.Some(1) },
	} {
		if ps := CheckFigures(whole, figures(change)); rules(ps) != "figures" {
			t.Errorf("%s: got %v, want a breach of rule figures", name, ps)
		}
	}
	if ps := CheckFigures(whole, whole[:1]); rules(ps) != "figures" {
		t.Errorf("an event left out: got %v", ps)
	}
}
