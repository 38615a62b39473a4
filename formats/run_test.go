package formats

import (
	"slices"
	"testing"
)

// TestViewModels: the view's models are every model the run used, in the
// order first seen: a request counts under its agent's model, else under
// the model its response names.
func TestViewModels(t *testing.T) {
	var v RunView
	for _, e := range []*Event{
		{Kind: RunStart, Run: RunInfo{Model: "sonnet"}},
		// The main agent's model wins over its response's dated name.
		{Kind: Usage, Response: Response{Model: "sonnet-20250929"}},
		// A subagent started without a model: its requests name it.
		{Kind: AgentStart, Agent: "sub"},
		{Kind: Usage, Agent: "sub", Response: Response{Model: "haiku"}},
		// A subagent that switched models: its requests use the new one.
		{Kind: AgentStart, Agent: "other", AgentInfo: AgentInfo{Model: "opus"}},
		{Kind: ModelChange, Agent: "other", Run: RunInfo{Model: "opus-2"}},
		{Kind: Usage, Agent: "other", Response: Response{Model: "opus-2-dated"}},
		// An agent the source never started.
		{Kind: Usage, Agent: "stray", Response: Response{Model: "gemini"}},
		{Kind: RunEnd},
	} {
		v.Observe(e)
	}
	want := []string{"sonnet", "haiku", "opus", "opus-2", "gemini"}
	if !slices.Equal(v.Models, want) {
		t.Errorf("Models = %q, want %q", v.Models, want)
	}
	if v.Info.Model != "sonnet" {
		t.Errorf("Info.Model = %q: a subagent's switch is not the run's", v.Info.Model)
	}
}
