package nomadtest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Nomad 1.6's artifact getter knows only these schemes (a file:// URI or
// a plain path fails to download).
var getterSchemes = []string{"http", "https", "s3", "gcs", "git", "hg"}

// WithArtifacts makes the fake download artifacts from files (URI →
// content) instead of the network; any other http(s) URI answers 404.
func WithArtifacts(files map[string][]byte) Option {
	return func(s *Server) { s.fetch = &http.Client{Transport: staticFiles(files), Timeout: 10 * time.Second} }
}

type staticFiles map[string][]byte

func (f staticFiles) RoundTrip(r *http.Request) (*http.Response, error) {
	b, ok := f[r.URL.String()]
	status := http.StatusOK
	if !ok || r.Method != http.MethodGet {
		status, b = http.StatusNotFound, []byte("not found")
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)), Header: http.Header{}, Request: r}, nil
}

// taskSetup is what happens when a client starts a task: its artifacts are
// downloaded and the driver looks for the command. A failed setup fails
// the allocation with Nomad's task events.
type taskSetup struct {
	failed bool
	events []*api.TaskEvent
}

// setupTasks sets up every task of job the way a Nomad client would,
// before any allocation exists (artifacts are fetched once per URI).
func (s *Server) setupTasks(ctx context.Context, job *api.Job) map[string]taskSetup {
	out := map[string]taskSetup{}
	cache := map[string]fetched{}
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			out[deref(tg.Name, "")+"/"+t.Name] = s.setupTask(ctx, t, cache)
		}
	}
	return out
}

// fetched is the result of one download: the files it puts below its
// destination (nil: unknown, for getters the fake does not run).
type fetched struct {
	body []byte
	err  string
}

func (s *Server) setupTask(ctx context.Context, t *api.Task, cache map[string]fetched) taskSetup {
	now := time.Now().UnixNano()
	events := []*api.TaskEvent{
		{Type: "Received", Time: now, DisplayMessage: "Task received by client"},
		{Type: "Task Setup", Time: now, DisplayMessage: "Building Task Directory"},
	}
	fail := func(typ, msg string) taskSetup {
		return taskSetup{failed: true, events: append(events,
			&api.TaskEvent{Type: typ, Time: now, DisplayMessage: msg, DriverError: msg},
			&api.TaskEvent{Type: "Not Restarting", Time: now, DisplayMessage: "Error was unrecoverable", FailsTask: true})}
	}
	files := map[string]bool{}  // task-dir relative paths known to exist
	opaque := map[string]bool{} // destinations whose content the fake cannot know
	if len(t.Artifacts) > 0 {
		events = append(events, &api.TaskEvent{Type: "Downloading Artifacts", Time: now, DisplayMessage: "Client is downloading artifacts"})
	}
	for _, a := range t.Artifacts {
		src, dest := deref(a.GetterSource, ""), path.Clean(deref(a.RelativeDest, "local/"))
		scheme := "file"
		if u, err := url.Parse(src); err == nil && u.Scheme != "" {
			scheme = u.Scheme
		}
		download := func(why string) taskSetup {
			return fail("Failed Artifact Download", fmt.Sprintf("failed to download artifact %q: getter subprocess failed: exit status 1: failed to download artifact: %s", src, why))
		}
		switch {
		case scheme != "http" && scheme != "https" && !slices.Contains(getterSchemes, scheme):
			return download(fmt.Sprintf("download not supported for scheme '%s'", scheme))
		case scheme != "http" && scheme != "https":
			opaque[dest] = true
			continue
		}
		f, ok := cache[src]
		if !ok {
			f = s.download(ctx, src)
			cache[src] = f
		}
		if f.err != "" {
			return download(f.err)
		}
		if sum, ok := a.GetterOptions["checksum"]; ok {
			typ, want, _ := strings.Cut(sum, ":")
			got := sha256.Sum256(f.body)
			if typ == "sha256" && !strings.EqualFold(want, hex.EncodeToString(got[:])) {
				return download(fmt.Sprintf("Checksums did not match for %s.\nExpected: %s\nGot: %s", dest, want, hex.EncodeToString(got[:])))
			}
		}
		archive := a.GetterOptions["archive"]
		if archive == "" {
			archive = archiveOf(src)
		}
		switch {
		case deref(a.GetterMode, "any") == "file":
			files[dest] = true
		case archive == "false" || archive == "":
			files[path.Join(dest, path.Base(strings.SplitN(src, "?", 2)[0]))] = true
		default:
			names, err := unpack(archive, f.body)
			if err != nil {
				return download(fmt.Sprintf("error downloading '%s': %v", src, err))
			}
			for _, n := range names {
				files[path.Join(dest, n)] = true
			}
		}
	}
	for _, tmpl := range t.Templates {
		files[path.Clean(deref(tmpl.DestPath, ""))] = true
	}
	if t.Driver != "raw_exec" && t.Driver != "exec" {
		return taskSetup{events: append(events, &api.TaskEvent{Type: "Started", Time: now, DisplayMessage: "Task started by client"})}
	}
	cmd, _ := t.Config["command"].(string)
	if rel, inTask := taskRelative(cmd); inTask && !files[rel] && !under(opaque, rel) {
		return fail("Driver Failure", fmt.Sprintf("failed to launch command with executor: rpc error: code = Unknown desc = binary %q could not be found",
			path.Join("/var/nomad/alloc/<alloc>", t.Name, rel)))
	}
	return taskSetup{events: append(events, &api.TaskEvent{Type: "Started", Time: now, DisplayMessage: "Task started by client"})}
}

// download GETs an http(s) artifact, with go-getter's error texts.
func (s *Server) download(ctx context.Context, src string) fetched {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return fetched{err: err.Error()}
	}
	resp, err := s.fetch.Do(req)
	if err != nil {
		return fetched{err: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fetched{err: fmt.Sprintf("bad response code: %d", resp.StatusCode)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fetched{err: err.Error()}
	}
	return fetched{body: b}
}

// taskRelative maps a driver command to a path relative to the task
// directory, when it is inside it.
func taskRelative(cmd string) (string, bool) {
	for _, p := range []string{"${NOMAD_TASK_DIR}/", "${NOMAD_TASK_DIR}"} {
		if rest, ok := strings.CutPrefix(cmd, p); ok {
			return path.Clean(path.Join("local", rest)), true
		}
	}
	if strings.HasPrefix(cmd, "local/") || strings.HasPrefix(cmd, "./local/") {
		return path.Clean(cmd), true
	}
	return "", false
}

func under(dirs map[string]bool, p string) bool {
	for d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// archiveOf is go-getter's archive detection by file extension.
func archiveOf(src string) string {
	p := strings.ToLower(strings.SplitN(src, "?", 2)[0])
	for _, ext := range []string{"tar.gz", "tgz", "zip", "tar.bz2", "tbz2", "tar.xz", "txz", "tar"} {
		if strings.HasSuffix(p, "."+ext) {
			return ext
		}
	}
	return ""
}

// unpack lists the regular files of an archive.
func unpack(kind string, b []byte) ([]string, error) {
	var names []string
	switch kind {
	case "tar.gz", "tgz", "tar":
		var r io.Reader = bytes.NewReader(b)
		if kind != "tar" {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, err
			}
			r = zr
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return names, nil
			}
			if err != nil {
				return nil, err
			}
			if h.Typeflag == tar.TypeReg {
				names = append(names, path.Clean(h.Name))
			}
		}
	case "zip":
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if !f.FileInfo().IsDir() {
				names = append(names, path.Clean(f.Name))
			}
		}
		return names, nil
	}
	return nil, fmt.Errorf("the fake cannot unpack %s archives", kind)
}
