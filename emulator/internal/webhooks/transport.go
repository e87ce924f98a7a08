package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxInFlightAll bounds the attempts under way at once over every tenant.
const MaxInFlightAll = 64

// errNotAllowed refuses a dial to an address the guard does not let deliveries reach.
var errNotAllowed = errors.New("webhooks: address not allowed")

// Guard decides which addresses deliveries may reach: loopback always, any other only when
// --webhook-allow names it. It judges the address a connection is about to be made to, after
// resolution, so a name that resolves somewhere else cannot take a delivery there.
type Guard struct {
	allow []allowed
}

// allowed is one HOST[:PORT] of --webhook-allow: an address, or a name resolved when a
// connection is made; no port means any.
type allowed struct {
	addr netip.Addr
	name string
	port int
}

// ParseAllow reads --webhook-allow entries: HOST or HOST:PORT, an IPv6 address in brackets.
func ParseAllow(entries []string) (*Guard, error) {
	g := &Guard{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, port := e, 0
		if h, p, err := net.SplitHostPort(e); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("--webhook-allow %q: the port must be 1 to 65535", e)
			}
			host, port = h, n
		}
		host = strings.Trim(host, "[]")
		a := allowed{port: port}
		if ip, err := netip.ParseAddr(host); err == nil {
			a.addr = ip.Unmap()
		} else if validName(host) {
			a.name = strings.ToLower(host)
		} else {
			return nil, fmt.Errorf("--webhook-allow %q: not a host name or an IP address", e)
		}
		g.allow = append(g.allow, a)
	}
	return g, nil
}

// validName accepts a DNS name's characters.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// Allows reports whether a delivery may connect to ip:port: loopback, or an entry that names
// the address or a name resolving to it.
func (g *Guard) Allows(ctx context.Context, ip netip.Addr, port int) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	for _, a := range g.allow {
		if a.port != 0 && a.port != port {
			continue
		}
		if a.name == "" {
			if a.addr == ip {
				return true
			}
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", a.name)
		if err != nil {
			continue
		}
		for _, r := range addrs {
			if r.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// control is the dialer's last word before a connection: the address it is about to connect
// to, resolved, must be allowed.
func (g *Guard) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !g.Allows(ctx, ap.Addr(), int(ap.Port())) {
		return errNotAllowed
	}
	return nil
}

// Transport sends attempts over HTTP: never through a proxy, never following a redirect (a 3xx
// is the receiver's answer), to allowed addresses only, at most MaxInFlightAll at once, reading
// at most MaxAnswerBytes of an answer.
type Transport struct {
	client *http.Client
	slots  chan struct{}
	agent  string
}

// NewTransport returns a sender bound by the guard; agent is its User-Agent.
func NewTransport(g *Guard, agent string) *Transport {
	d := &net.Dialer{Timeout: AttemptTimeout, ControlContext: g.control}
	rt := &http.Transport{
		Proxy:                  nil, // an environment's proxy would carry deliveries off the machine
		DialContext:            d.DialContext,
		MaxIdleConns:           MaxInFlightAll,
		MaxIdleConnsPerHost:    MaxInFlight,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    AttemptTimeout,
		ResponseHeaderTimeout:  AttemptTimeout,
		MaxResponseHeaderBytes: MaxAnswerBytes,
	}
	return &Transport{
		client: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		slots:  make(chan struct{}, MaxInFlightAll),
		agent:  agent,
	}
}

// Send makes one attempt.
func (t *Transport) Send(ctx context.Context, a Attempt) Result {
	select {
	case t.slots <- struct{}{}:
		defer func() { <-t.slots }()
	case <-ctx.Done():
		return Result{Err: classify(ctx.Err())}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
	if err != nil {
		return Result{Err: ErrNetwork}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", t.agent)
	h.Set("webhook-id", a.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(a.Timestamp, 10))
	h.Set("webhook-signature", a.Signature)
	start := time.Now()
	resp, err := t.client.Do(req)
	latency := time.Since(start)
	if err != nil {
		return Result{Latency: latency, Err: classify(err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswerBytes))
	resp.Body.Close()
	return Result{Status: resp.StatusCode, Latency: latency}
}

// Close lets go of idle connections.
func (t *Transport) Close() { t.client.CloseIdleConnections() }

// classify names why an attempt got no answer, without the Go error's words.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errNotAllowed):
		return ErrNotAllowed
	case errors.Is(err, context.Canceled):
		return ErrCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	}
	return ErrNetwork
}
