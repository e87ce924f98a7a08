package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

func TestDurationRoundTrip(t *testing.T) {
	rule := api.Perturbation{Match: api.FaultMatch{Path: "/v1/models"}, Delay: api.Duration(1500 * time.Millisecond)}
	b, err := json.Marshal(rule)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"match":{"path":"/v1/models"},"delay":"1.5s"}`; string(b) != want {
		t.Errorf("marshal: %s, want %s", b, want)
	}
	var back api.Perturbation
	if err := json.Unmarshal(b, &back); err != nil || back.Delay != rule.Delay {
		t.Errorf("unmarshal: %+v, %v", back, err)
	}
	for _, bad := range []string{`{"delay":15}`, `{"delay":"soon"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s decoded without an error", bad)
		}
	}
}
