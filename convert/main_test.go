package convert

import (
	"os"
	"testing"

	"github.com/agentconv/agentconv/formats/formatstest"
)

func TestMain(m *testing.M) {
	formatstest.SetTestGC()
	os.Exit(m.Run())
}
