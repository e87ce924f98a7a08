package emulator

import (
	"bytes"
	"container/list"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/gorilla/mux"
)

// fileCacheBytes bounds the memory that made output files occupy; past it the least recently
// used are dropped and made again, identically, when next requested.
const fileCacheBytes = 256 << 20

// serveFile serves an output without authentication, as the service's file URLs are: the job
// id in the path is the secret (and the tenant's name, for a tenant's files). Ranges, HEAD and
// conditional requests come from ServeContent.
func (s *Server) serveFile() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		vars := mux.Vars(r)
		f, err := worldOf(r).File(vars["job"], vars["name"])
		if err != nil {
			return err
		}
		h := w.Header()
		h.Set("Content-Type", f.Output.ContentType)
		h.Set("ETag", fmt.Sprintf(`"%016x-%d"`, f.Output.Seed, len(f.Data)))
		h.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(f.ExpiresAt.Sub(f.Now).Seconds())))
		http.ServeContent(w, r, "", f.Finished, bytes.NewReader(f.Data))
		return nil
	}
}

// fileCache keeps made files, least recently used dropped first, within a byte budget.
type fileCache struct {
	mu     sync.Mutex
	budget int
	size   int
	order  *list.List // front: most recent
	items  map[string]*list.Element
}

type cachedFile struct {
	path string
	data []byte
}

func newFileCache(budget int) *fileCache {
	return &fileCache{budget: budget, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns a kept file.
func (c *fileCache) Get(path string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[path]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedFile).data, true
}

// Put keeps a file, dropping the least recently used past the budget.
func (c *fileCache) Put(path string, data []byte) {
	if len(data) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[path]; ok {
		c.size -= len(el.Value.(*cachedFile).data)
		c.order.Remove(el)
	}
	c.items[path] = c.order.PushFront(&cachedFile{path, data})
	c.size += len(data)
	for c.size > c.budget {
		el := c.order.Back()
		f := el.Value.(*cachedFile)
		c.order.Remove(el)
		delete(c.items, f.path)
		c.size -= len(f.data)
	}
}

func (c *fileCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	c.items = map[string]*list.Element{}
	c.size = 0
}
