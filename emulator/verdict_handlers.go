package emulator

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// getVerdict judges the tenant's run: GET /_emulator/verdict[?exit=N], N the client command's
// exit status (not judged when absent).
func (s *Server) getVerdict() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		exit, err := exitOf(r)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: worldOf(r).Verdict(exit)}, nil
	}
}

// getBundle answers what explore writes for a run of the tenant: GET
// /_emulator/bundle?seed=S[&run=K][&exit=N]. The snapshot holds the journal, which the verdict's
// and the report's entries cite; so the bundle is at most a snapshot with its journal plus the
// report, both bounded by the tenant's stores.
func (s *Server) getBundle() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		seed, err := intParam(r, "seed", true, 64)
		if err != nil {
			return reply{}, err
		}
		run, err := intParam(r, "run", false, 32)
		if err != nil {
			return reply{}, err
		}
		if run < 0 {
			return reply{}, paramError("run", "run must be an integer of 0 or more")
		}
		exit, err := exitOf(r)
		if err != nil {
			return reply{}, err
		}
		tenant, world := infoOf(r).tenant, worldOf(r)
		snapshot, err := json.Marshal(s.snapshotOf(tenant, true)) // as GET /_emulator/snapshot?journal=true encodes it
		if err != nil {
			return reply{}, err
		}
		n, findings := world.Judge()
		return reply{status: http.StatusOK, body: api.Bundle{Format: api.BundleFormat, Seed: seed, Run: int(run), Plan: world.APIPlan(),
			Verdict: world.Verdict(exit), Report: evidence.TenantReport(tenant.Name(), n, findings), Snapshot: snapshot}}, nil
	}
}

// exitOf reads the exit query parameter: a command's exit status, nil when not given.
func exitOf(r *http.Request) (*int, error) {
	if _, given, err := queryValue(r, "exit"); err != nil || !given {
		return nil, err
	}
	n, err := intParam(r, "exit", true, 32)
	if err != nil {
		return nil, err
	}
	exit := int(n)
	return &exit, nil
}

// intParam reads an integer query parameter of bits bits; 0 when it is absent and not
// required.
func intParam(r *http.Request, name string, required bool, bits int) (int64, error) {
	v, given, err := queryValue(r, name)
	switch {
	case err != nil:
		return 0, err
	case !given && required:
		return 0, paramError(name, "give %s, an integer", name)
	case !given:
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		return 0, paramError(name, "%s must be an integer of at most %d bits", name, bits)
	}
	return n, nil
}
