package mesos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/egret-stream/egret/core/spi"
)

// errStopped: the framework's loop has ended.
var errStopped = errors.New("the framework is stopping")

// do runs fn on the framework's loop and waits for it.
func (f *framework) do(fn func()) error {
	done := make(chan struct{})
	select {
	case f.ctrl <- func() { fn(); close(done) }:
	case <-f.quit:
		return errStopped
	}
	select {
	case <-done:
		return nil
	case <-f.quit:
		return errStopped
	}
}

// routes serves the control endpoint the CLI's kill, restart and update
// use (127.0.0.1 only):
//
//	GET  /status                containers, tasks, states (JSON Status)
//	POST /kill                  kill every task, tear the framework down, exit
//	POST /restart?container=N   relaunch one container's task (all without N)
//	POST /update                body: the new job (JSON); launch and kill containers
func (f *framework) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		var st Status
		if err := f.do(func() { st = f.status() }); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("POST /kill", func(w http.ResponseWriter, r *http.Request) {
		reply := make(chan error, 1)
		if err := f.do(func() { f.kill(reply) }); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		select {
		case err := <-reply:
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
			}
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		which := spi.AllContainers
		if v := r.URL.Query().Get("container"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				http.Error(w, fmt.Sprintf("container %q is not a container id (0, 1, ...)", v), http.StatusBadRequest)
				return
			}
			which = n
		}
		var err error
		if derr := f.do(func() { err = f.restart(which) }); derr != nil {
			http.Error(w, derr.Error(), http.StatusServiceUnavailable)
			return
		}
		var ns *notSubscribedError
		if errors.Is(err, spi.ErrNotFound) {
			http.Error(w, err.Error(), http.StatusNotFound)
		} else if errors.As(err, &ns) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
		}
	})
	mux.HandleFunc("POST /update", func(w http.ResponseWriter, r *http.Request) {
		var job spi.Job
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&job); err != nil {
			http.Error(w, "the body is not a job: "+err.Error(), http.StatusBadRequest)
			return
		}
		var err error
		if derr := f.do(func() { err = f.update(job) }); derr != nil {
			http.Error(w, derr.Error(), http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	return mux
}
