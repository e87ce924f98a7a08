// Command loadbench-baseline is a bare net/http server answering every request with fixed
// bytes: the yardstick scripts/loadbench compares the emulator with on the same machine.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address HOST:PORT")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	body := []byte(`{"status":"ok"}` + "\n")
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})))
}
