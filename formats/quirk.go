package formats

import (
	"fmt"
	"sync"
)

// Quirk is one loss of a writer's own encoding: something of an event
// whose features the target carries that its encoding still cannot keep
// (adal-json's output previews). Each quirk is declared once, by
// NewQuirk, with the noun phrase that names it on stderr and in the docs;
// the dialect rows that report it list it (Dialect.Quirks), and a writer
// reports it through Report.Quirk. A phrase is never free text at the
// place it is reported, so the same loss cannot be spelt two ways.
type Quirk struct{ phrase *string }

// quirks are the quirks declared, in order, and by phrase.
var quirks = struct {
	sync.Mutex
	all []Quirk
	by  map[string]Quirk
}{by: map[string]Quirk{}}

// NewQuirk declares a quirk named by phrase, a noun phrase that reads
// after "lost: 3 ×". It panics if the phrase is empty, is already a
// quirk's, or is a feature's name: a loss has one name, declared once.
// Call it in a package-level var declaration.
func NewQuirk(phrase string) Quirk {
	if phrase == "" {
		panic("formats: a quirk needs a phrase")
	}
	for _, n := range featureNames {
		if n == phrase {
			panic(fmt.Sprintf("formats: quirk %q is a feature's name", phrase))
		}
	}
	quirks.Lock()
	defer quirks.Unlock()
	if _, ok := quirks.by[phrase]; ok {
		panic(fmt.Sprintf("formats: quirk %q is declared twice", phrase))
	}
	q := Quirk{&phrase}
	quirks.all = append(quirks.all, q)
	quirks.by[phrase] = q
	return q
}

// Name is the quirk's phrase; "" for the zero Quirk, which names nothing.
func (q Quirk) Name() string {
	if q.phrase == nil {
		return ""
	}
	return *q.phrase
}

func (q Quirk) String() string { return q.Name() }

// QuirkNamed returns the declared quirk whose phrase is name.
func QuirkNamed(name string) (Quirk, bool) {
	quirks.Lock()
	defer quirks.Unlock()
	q, ok := quirks.by[name]
	return q, ok
}

// Quirks lists every quirk declared so far, in the order of declaration.
func Quirks() []Quirk {
	quirks.Lock()
	defer quirks.Unlock()
	return append([]Quirk(nil), quirks.all...)
}

// QuirkNames lists the phrases of qs, in order.
func QuirkNames(qs []Quirk) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name()
	}
	return out
}

// The quirks of more than one dialect package, declared here once.
var (
	// MergedToolErrors: a failed call's error text goes into its output,
	// which then reads as the output.
	MergedToolErrors = NewQuirk("tool error texts (merged into the output)")
	// FailedRunAnswers: a failed run's result holds its error, not an
	// answer the model gave before it failed.
	FailedRunAnswers = NewQuirk("answers of failed runs")
	// LateSessionIDs: the target says a run's session at its start, and
	// the source said it only at its end.
	LateSessionIDs = NewQuirk("session ids given only at the run's end")
	// ExitCodesBeyond01: the target's encoding reads back as exit code 0
	// for a success and 1 for anything else.
	ExitCodesBeyond01 = NewQuirk("exit codes other than 0 and 1")
	// ExitCodesBeyondRefusal: as ExitCodesBeyond01, and 2 for a run
	// whose last call to end was refused (Claude Code's and Cursor's).
	ExitCodesBeyondRefusal = NewQuirk("exit codes other than 0, 1 and 2 after a refused call")
	// CancelledRunsAsErrors: a result line has no cancelled outcome.
	CancelledRunsAsErrors = NewQuirk("cancelled run statuses (written as errors)")
	// PromptsNeverGiven: a run whose source never gave its prompt (a
	// stream does not print it), so that the agent resuming the session
	// never sees its task.
	PromptsNeverGiven = NewQuirk("user prompts the source never gave (a resumed agent does not see its task)")
	// UnsummedRunUsage: a session file holds the usage of each request,
	// and the run's totals are their sum.
	UnsummedRunUsage = NewQuirk("token usage of runs beyond the sum of their requests")
	// ZeroTokenCounts: the target needs every count of a request's usage.
	ZeroTokenCounts = NewQuirk("token counts the source did not give (written as 0)")
	// ExtraMessages: the target keeps only the run's answer of what the
	// model said.
	ExtraMessages = NewQuirk("assistant messages besides the answer")
	// UnansweredCallsFailed: the target needs a result for each call.
	UnansweredCallsFailed = NewQuirk("tool calls without a result (written as failed calls)")
)
