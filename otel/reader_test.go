package otel_test

import (
	"testing"

	"github.com/agentconv/agentconv/formats"
	"github.com/agentconv/agentconv/formats/formatstest"
	"github.com/agentconv/agentconv/otel"
)

// TestReadAgentTotalsAsAggregate: an agent's span without chat spans (an
// older agentconv's, or a spool cut before them) gives its usage itself:
// the totals of its requests together, read as one Usage marked Aggregate,
// which no request takes, at the agent's end.
func TestReadAgentTotalsAsAggregate(t *testing.T) {
	evs := formatstest.Read(t, otel.OTLPJSON, formatstest.Fixture(t, "otlp-json", "no-root.jsonl"))
	var sub []*formats.Event
	for _, e := range formatstest.OfKind(evs, formats.Usage) {
		if e.Agent == "ses_Cc81deep" {
			sub = append(sub, e)
		}
	}
	if len(sub) != 1 || !sub[0].Aggregate || sub[0].Usage.InputTokens.V != 1830 || sub[0].Usage.OutputTokens.V != 64 {
		t.Fatalf("the agent's totals: %d Usage events (want one, Aggregate, 1830 in and 64 out): %+v", len(sub), sub)
	}
}
