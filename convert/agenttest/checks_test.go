package agenttest

import "testing"

// Check runs every check on one capture.
func Check(t *testing.T, c *Capture) {
	t.Helper()
	checkServed(t, c)
}

// checkServed: the agent talked to the scripted model, in the thread of
// its prompt.
func checkServed(t *testing.T, c *Capture) {
	t.Helper()
	for _, r := range c.Log {
		if r.Thread == "main" {
			return
		}
	}
	t.Errorf("%s %s %s %s: the server received no request of the main thread (%d requests in all)", c.Meta.Agent, c.Meta.Version, c.Meta.Scenario, c.Meta.Mode, len(c.Log))
}
