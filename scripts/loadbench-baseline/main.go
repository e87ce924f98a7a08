// Command loadbench-baseline is a bare net/http server: the yardstick scripts/loadbench compares
// the emulator with on the same machine. Given -routes, it answers each listed request URI with
// the bytes the emulator gave for it, so both sides write the same bodies; anything else gets a
// small fixed body.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address HOST:PORT")
	routes := flag.String("routes", "", `a file of lines "REQUEST-URI<TAB>BODY-FILE": answer that URI with that file's bytes`)
	flag.Parse()
	bodies, err := load(*routes)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fixed := []byte(`{"status":"ok"}` + "\n")
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request body as any handler that decodes one must.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		body, ok := bodies[r.URL.RequestURI()]
		if !ok {
			body = fixed
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})))
}

// load reads the routes file into bodies by request URI.
func load(path string) (map[string][]byte, error) {
	bodies := map[string][]byte{}
	if path == "" {
		return bodies, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		uri, file, ok := strings.Cut(s.Text(), "\t")
		if !ok {
			return nil, errors.New("-routes: want lines REQUEST-URI<TAB>BODY-FILE")
		}
		if bodies[uri], err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	return bodies, s.Err()
}
