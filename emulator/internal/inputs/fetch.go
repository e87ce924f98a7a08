package inputs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Allow is the hosts inputs may really be fetched from (--inputs-allow): HOST or HOST:PORT
// entries, a test's own file server on loopback most often. A nil Allow allows none.
type Allow struct {
	entries []allowEntry
}

type allowEntry struct {
	host string
	port string // "" for any
}

// ParseAllow reads --inputs-allow entries: HOST or HOST:PORT, an IPv6 address in brackets.
func ParseAllow(entries []string) (*Allow, error) {
	a := &Allow{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, port := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("--inputs-allow %q: the port must be 1 to 65535", e)
			}
			host, port = h, p
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if host == "" || strings.ContainsAny(host, "/?#@ ") {
			return nil, fmt.Errorf("--inputs-allow %q: not a host name or an IP address", e)
		}
		a.entries = append(a.entries, allowEntry{host, port})
	}
	return a, nil
}

// Len is how many entries the list has.
func (a *Allow) Len() int {
	if a == nil {
		return 0
	}
	return len(a.entries)
}

// Matches reports whether a URL's host (and port) is on the list. A URL without a port names
// its scheme's.
func (a *Allow) Matches(u *url.URL) bool {
	if a == nil || u == nil {
		return false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	for _, e := range a.entries {
		if e.host == host && (e.port == "" || e.port == port) {
			return true
		}
	}
	return false
}

// FetchTimeout bounds one fetch of an allowed host, redirects included.
const FetchTimeout = 10 * time.Second

// Fetcher reads inputs from allowed hosts: never through a proxy, following at most the rules'
// redirects and only to allowed hosts, reading at most the kind's limit.
type Fetcher struct {
	allow  *Allow
	client *http.Client
}

// errRedirect stops a redirect the rules do not follow.
var errRedirect = errors.New("redirect not followed")

// NewFetcher returns a fetcher of the allowed hosts.
func NewFetcher(allow *Allow) *Fetcher {
	rt := &http.Transport{
		Proxy:                 nil, // an environment's proxy would carry fetches off the machine
		DialContext:           (&net.Dialer{Timeout: FetchTimeout}).DialContext,
		MaxIdleConns:          8,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   FetchTimeout,
		ResponseHeaderTimeout: FetchTimeout,
	}
	return &Fetcher{allow: allow, client: &http.Client{Transport: rt, Timeout: FetchTimeout}}
}

// Fetch reads an allowed URL as the service would when the job starts: a 2xx answer within the
// rules' redirects, each to an allowed host, of at most limit bytes; its Content-Type as sent.
func (f *Fetcher) Fetch(ctx context.Context, u *url.URL, maxRedirects int, limit int64) ([]byte, string, *Failure) {
	client := *f.client
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects || !f.allow.Matches(req.URL) {
			return errRedirect
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", &Failure{FailFetch, "the URL does not make a request"}
	}
	req.Header.Set("User-Agent", "mediagen-emulator-input-fetch")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, errRedirect) {
			return nil, "", &Failure{FailFetch, fmt.Sprintf("the URL redirects; the service follows at most %d redirects, each to an allowed host", maxRedirects)}
		}
		return nil, "", &Failure{FailFetch, "the URL could not be fetched: " + shortError(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return nil, "", &Failure{FailFetch, fmt.Sprintf("the URL answered %d, a redirect the service does not follow", resp.StatusCode)}
	}
	if resp.StatusCode/100 != 2 {
		return nil, "", &Failure{FailFetch, fmt.Sprintf("the URL answered %d", resp.StatusCode)}
	}
	if resp.ContentLength > limit {
		return nil, "", &Failure{FailTooLarge, fmt.Sprintf("the file is %d bytes; the service fetches at most %d", resp.ContentLength, limit)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", &Failure{FailFetch, "the file's body could not be read: " + shortError(err)}
	}
	if int64(len(data)) > limit {
		return nil, "", &Failure{FailTooLarge, fmt.Sprintf("the file is over %d bytes, the most the service fetches", limit)}
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// shortError names a fetch's failure without the URL the client already knows.
func shortError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}
