package emulatortest

import (
	"net/http"
	"os"
	"strings"
	"time"
)

// The environment variables a client under test is run with by `mediagen-emulator explore` and
// `conformance`, and by a CI job whose emulator is a service container.
const (
	URLEnv        = "MEDIAGEN_EMULATOR_URL" // the emulator's base URL
	KeyEnv        = "MEDIAGEN_API_KEY"      // the key to use, KEY.TENANT when it names a tenant
	TenantEnv     = "MEDIAGEN_TENANT"       // the tenant to use
	AdminTokenEnv = "MEDIAGEN_ADMIN_TOKEN"  // the control API's admin token, when it has one
)

// Attach returns a handle on an emulator already running at url (a container, the one explore
// started), in its default tenant, with the default catalog's keys; $MEDIAGEN_ADMIN_TOKEN is
// sent when set. Nothing is stopped when t ends.
func Attach(t TB, url string) *Emulator {
	t.Helper()
	transport := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(transport.CloseIdleConnections)
	e := &Emulator{
		URL:        strings.TrimRight(url, "/"),
		Keys:       DefaultKeys,
		Accounts:   DefaultAccounts,
		t:          t,
		client:     &http.Client{Transport: transport, Timeout: time.Minute},
		adminToken: os.Getenv(AdminTokenEnv),
	}
	e.do(http.MethodGet, "/_emulator/health", nil, http.StatusOK, nil)
	return e
}

// FromEnv attaches to the emulator at $MEDIAGEN_EMULATOR_URL when it is set, else starts one
// with opts. When $MEDIAGEN_TENANT (or a $MEDIAGEN_API_KEY of the form KEY.TENANT) names a
// tenant, as `mediagen-emulator explore` and `conformance` do for their command, the handle acts
// in it, Keys.All is $MEDIAGEN_API_KEY when set, and Tenant(t) gives that same tenant to every
// test instead of a fresh one (the run's plan is in force there), never deleting it.
func FromEnv(t TB, opts ...Option) *Emulator {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		return Start(t, opts...)
	}
	e := Attach(t, u)
	key := os.Getenv(KeyEnv)
	name := os.Getenv(TenantEnv)
	if _, suffix, ok := strings.Cut(key, "."); name == "" && ok {
		name = suffix
	}
	if name == "" {
		return e
	}
	e.TenantName, e.given = name, true
	e.Keys = Keys{All: DefaultKeys.All + "." + name, Read: DefaultKeys.Read + "." + name,
		Generate: DefaultKeys.Generate + "." + name, Poor: DefaultKeys.Poor + "." + name}
	if key != "" {
		e.Keys.All = key
	}
	return e
}
