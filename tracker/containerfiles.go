package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/shellapi"
)

// The log files of a container, read through the container's shell
// (daemons/shell): /topologies/containerfilestats lists them,
// /topologies/containerfiledata returns a byte range of one. The tracker
// only reads: it never sends the topology's secret.

// Bounds of /topologies/containerfiledata.
const (
	defaultFileChunk = 64 << 10
	maxFileChunk     = 1 << 20
)

// logName is what a log file name may look like; the shell checks it
// again against the files it lists.
var logName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)

// fileQuery holds the parameters of the container file endpoints.
type fileQuery struct {
	container      int
	path           string
	offset, length int64
}

func parseFileQuery(vals url.Values, withData bool) (fileQuery, error) {
	var f fileQuery
	c, err := strconv.Atoi(vals.Get("container"))
	if err != nil || c < 0 || c > 1<<20 {
		return f, badRequest("query parameter container %q must be a container index (0, 1, ...)", truncate(vals.Get("container"), 40))
	}
	f.container = c
	if !withData {
		return f, nil
	}
	f.path = vals.Get("path")
	if !logName.MatchString(f.path) || f.path == "." || f.path == ".." {
		return f, badRequest("query parameter path %q must name a log file of the container as /topologies/containerfilestats lists it (letters, digits, '.', '-', '_')", truncate(f.path, 40))
	}
	f.offset, f.length = 0, defaultFileChunk
	if s := vals.Get("offset"); s != "" {
		if f.offset, err = strconv.ParseInt(s, 10, 64); err != nil {
			return f, badRequest("query parameter offset %q must be an integer (negative: from the end)", truncate(s, 40))
		}
	}
	if s := vals.Get("length"); s != "" {
		if f.length, err = strconv.ParseInt(s, 10, 64); err != nil || f.length < 0 || f.length > maxFileChunk {
			return f, badRequest("query parameter length %q must be 0..%d", truncate(s, 40), maxFileChunk)
		}
	}
	return f, nil
}

// shellURL returns the base URL of a container's shell.
func (t *Tracker) shellURL(ctx context.Context, c *clusterState, name string, container int) (string, error) {
	var base string
	err := c.store(ctx, t.opts.Backends, func(s *state.Store) error {
		if _, err := s.Topology(ctx, name); err != nil {
			return err
		}
		loc, err := s.ShellLocation(ctx, name, container)
		if errors.Is(err, spi.ErrNotFound) {
			return &unavailableError{fmt.Errorf("container %d of topology %q has no shell running (no such container, or it is down)", container, name)}
		}
		if err != nil {
			return err
		}
		base = "http://" + net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetPort())))
		return nil
	})
	if errors.Is(err, spi.ErrNotFound) {
		return "", notFound("no topology %q in cluster %q", name, c.name)
	}
	var ue *unavailableError
	if err != nil && !errors.As(err, &ue) {
		err = &unavailableError{err}
	}
	return base, err
}

// getShell sends GET path to a container's shell and returns the answer.
func (t *Tracker) getShell(ctx context.Context, q *query, container int, path string) (*http.Response, error) {
	base, err := t.shellURL(ctx, q.cluster, q.name, container)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.opts.Client.Do(req)
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("shell of container %d of %q at %s: %w", container, q.name, base, err)}
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return resp, nil
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, notFound("container %d of topology %q has no log file %s", container, q.name, path)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, &unavailableError{fmt.Errorf("shell of container %d of %q: GET %s: %s: %s", container, q.name, path, resp.Status, oneLine(string(b)))}
	}
}

type fileStatJSON struct {
	Name  string `json:"name"`
	Size  int64  `json:"size"`
	MTime string `json:"mtime"`
}

func (t *Tracker) containerFileStatsEP(ctx context.Context, q *query) (any, error) {
	resp, err := t.getShell(ctx, q, q.files.container, "/logs")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var files []struct {
		Name    string    `json:"name"`
		Size    int64     `json:"size"`
		ModTime time.Time `json:"mtime"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&files); err != nil {
		return nil, &unavailableError{fmt.Errorf("shell of container %d of %q: bad answer to GET /logs: %w", q.files.container, q.name, err)}
	}
	out := []fileStatJSON{}
	for _, f := range files {
		out = append(out, fileStatJSON{Name: f.Name, Size: f.Size, MTime: f.ModTime.UTC().Format(time.RFC3339Nano)})
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "container": q.files.container, "files": out}, nil
}

// readFile reads the byte range of a container's log file q asks for:
// the data, where it starts, and the file's size.
func (t *Tracker) readFile(ctx context.Context, q *query) (data []byte, offset, size int64, err error) {
	f := q.files
	path := fmt.Sprintf("/logs/%s?offset=%d&length=%d", url.PathEscape(f.path), f.offset, f.length)
	resp, err := t.getShell(ctx, q, f.container, path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxFileChunk+1))
	if err != nil {
		return nil, 0, 0, &unavailableError{fmt.Errorf("shell of container %d of %q: reading %s: %w", f.container, q.name, f.path, err)}
	}
	size, _ = strconv.ParseInt(resp.Header.Get(shellapi.HeaderFileSize), 10, 64)
	offset, _ = strconv.ParseInt(resp.Header.Get(shellapi.HeaderOffset), 10, 64)
	return data, offset, size, nil
}

func (t *Tracker) containerFileDataEP(ctx context.Context, q *query) (any, error) {
	data, offset, size, err := t.readFile(ctx, q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "container": q.files.container, "path": q.files.path,
		"offset": offset, "length": len(data), "size": size, "data": string(data)}, nil
}
