package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection that writes requests by hand and reads answers
// with the standard library's parser. It costs the load generator a fraction of what
// net/http's client does, which matters when the generator and the emulator share two cores.
type conn struct {
	addr string // host:port
	nc   net.Conn
	r    *bufio.Reader
	buf  []byte // the request being written, reused
	body []byte // the last answer's body, reused
}

// maxBody bounds what an answer may hold: the emulator's job and quote bodies are a few KB.
const maxBody = 1 << 20

// ioTimeout bounds every request so that a stuck emulator cannot hold the run past its time.
const ioTimeout = 30 * time.Second

func dial(addr string, readBuf int) (*conn, error) {
	c := &conn{addr: addr, r: bufio.NewReaderSize(nil, readBuf)}
	if err := c.redial(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *conn) redial() error {
	if c.nc != nil {
		c.nc.Close()
	}
	nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		c.nc = nil
		return err
	}
	c.nc = nc
	c.r.Reset(nc)
	return nil
}

func (c *conn) close() {
	if c.nc != nil {
		c.nc.Close()
	}
}

// send writes one request; headers alternate names and values.
func (c *conn) send(method, uri string, headers []string, body []byte) error {
	if c.nc == nil {
		if err := c.redial(); err != nil {
			return err
		}
	}
	b := c.buf[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\n"...)
	for i := 0; i+1 < len(headers); i += 2 {
		b = append(b, headers[i]...)
		b = append(b, ": "...)
		b = append(b, headers[i+1]...)
		b = append(b, "\r\n"...)
	}
	if body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.buf = b
	if err := c.nc.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	_, err := c.nc.Write(b)
	return err
}

// receive reads one answer: its status and body (valid until the next call), and the instant
// its status line and headers had arrived.
func (c *conn) receive() (status int, body []byte, at time.Time, err error) {
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, nil, time.Time{}, err
	}
	at = time.Now()
	buf := bytes.NewBuffer(c.body[:0])
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	c.body = buf.Bytes()
	if err != nil {
		return 0, nil, at, err
	}
	if len(c.body) > maxBody {
		return 0, nil, at, errors.New("answer body over 1 MiB")
	}
	if resp.Close {
		c.nc.Close()
		c.nc = nil
	}
	return resp.StatusCode, c.body, at, nil
}

// do sends a request and reads its answer; on a broken connection it redials once and tries
// again, since a request that never arrived did nothing.
func (c *conn) do(method, uri string, headers []string, body []byte) (int, []byte, time.Time, error) {
	for attempt := 0; ; attempt++ {
		err := c.send(method, uri, headers, body)
		if err == nil {
			status, b, at, err := c.receive()
			if err == nil {
				return status, b, at, nil
			}
			if attempt > 0 {
				return 0, nil, at, err
			}
		} else if attempt > 0 {
			return 0, nil, time.Time{}, err
		}
		if err := c.redial(); err != nil {
			return 0, nil, time.Time{}, err
		}
	}
}

// httpError is an unexpected answer: its status and the start of its body.
type httpError struct {
	what   string
	status int
	body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%s answered %d: %s", e.what, e.status, e.body)
}

// statusError describes an unexpected answer with the start of its body.
func statusError(what string, status int, body []byte) error {
	if len(body) > 200 {
		body = body[:200]
	}
	return &httpError{what, status, string(body)}
}

// refused reports whether err is an answer 429: the emulator refused the request at a bound.
func refused(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == http.StatusTooManyRequests
}
