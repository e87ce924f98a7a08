package emulator

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeZeroLimits: Serve with zero ServeLimits reads request bodies. A zero BodyTimeout
// once set every body's read deadline to the moment it arrived, so a Go user who left the
// limits out got 400 for every quote.
func TestServeZeroLimits(t *testing.T) {
	s := simServer(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, ServeLimits{}) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/quotes",
		strings.NewReader(`{"model":"`+schnellID+`",`+strings.Repeat(" ", 256<<10)+`"input":{"prompt":"a fox"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer mg_test_all")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a quote through Serve with zero limits answered %d, want 200", resp.StatusCode)
	}
}

// TestServeLimitsWithDefaults: limits left out take the defaults the command line shows; given
// ones stay.
func TestServeLimitsWithDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want ServeLimits }{
		{ServeLimits{}, ServeLimits{BodyTimeout: 30 * time.Second, IdleTimeout: time.Minute, DrainTimeout: time.Minute}},
		{ServeLimits{BodyTimeout: -1}, ServeLimits{BodyTimeout: 30 * time.Second, IdleTimeout: time.Minute, DrainTimeout: time.Minute}},
		{ServeLimits{BodyTimeout: 1, IdleTimeout: 2, DrainTimeout: 3}, ServeLimits{BodyTimeout: 1, IdleTimeout: 2, DrainTimeout: 3}},
	} {
		if got := tc.in.WithDefaults(); got != tc.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
