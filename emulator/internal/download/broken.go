package download

import (
	"net"
	"net/http"
	"strconv"
)

// Answers the way broken networks and proxies answer, which a fault asks for in place of the
// emulator's own.

// Malformed answers 200 with a JSON body that breaks off inside a string, as a proxy that
// mangles a body does.
func Malformed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"data":[{"id":"` + "\x00" + `,`))
}

// Truncated answers a body that stops short of its Content-Length, then closes the connection.
func Truncated(w http.ResponseWriter) {
	body := []byte(`{"data":[{"id":"truncated","name":"this body stops short of what Content-Length promised"`)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)*4))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	rc := http.NewResponseController(w)
	if rc.Flush() == nil {
		// Close without a reset: the client reads the short body, then an early EOF.
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// GatewayPage is the page a proxy answers status with, as nginx writes it.
func GatewayPage(status int) []byte {
	title := strconv.Itoa(status) + " " + http.StatusText(status)
	return []byte("<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" + title +
		"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
}

// Reset drops the client's connection with a TCP reset, the way a crashing proxy
// does. Without access to the connection it aborts the response instead.
func Reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
