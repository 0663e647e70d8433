package yarn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client speaks the ResourceManager's REST APIs: the YARN Services API
// (/app/v1/services) and the cluster API (/ws/v1/cluster), with simple
// authentication (?user.name=).
type client struct {
	base    *url.URL
	user    string
	http    *http.Client
	timeout time.Duration
}

// apiError is a non-2xx answer of the ResourceManager.
type apiError struct {
	method, path string
	status       int
	diagnostics  string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.status, e.diagnostics)
}

func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

func newClient(s *settings) *client {
	return &client{
		base:    s.rm,
		user:    s.user,
		timeout: s.requestTimeout,
		http:    &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}},
	}
}

// do sends method path with body (JSON-encoded when not nil) and decodes
// a 2xx answer into out (when not nil).
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	u := *c.base
	p, query, _ := strings.Cut(path, "?")
	u.Path = strings.TrimRight(u.Path, "/") + p
	q, _ := url.ParseQuery(query)
	q.Set("user.name", c.user)
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("ResourceManager %s does not answer (%s %s): %w", c.base.Host, method, p, unwrapURL(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, p, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &apiError{method: method, path: p, status: resp.StatusCode, diagnostics: diagnostics(raw, resp.Status)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the ResourceManager's answer is not the JSON expected (is %s a ResourceManager with the services API enabled?): %w", method, p, c.base, err)
	}
	return nil
}

// diagnostics extracts the one-line message of an error answer: the
// Services API's "diagnostics", the cluster API's RemoteException message,
// else the first line of the body.
func diagnostics(raw []byte, status string) string {
	var v struct {
		Diagnostics     string `json:"diagnostics"`
		RemoteException *struct {
			Message string `json:"message"`
		} `json:"RemoteException"`
	}
	msg := ""
	if json.Unmarshal(raw, &v) == nil {
		msg = v.Diagnostics
		if msg == "" && v.RemoteException != nil {
			msg = v.RemoteException.Message
		}
	}
	if msg == "" {
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("<")) {
			msg = status + " (an HTML page: is the address a ResourceManager with yarn.webapp.api-service.enable=true?)"
		} else {
			msg = string(raw)
		}
	}
	return oneLine(msg)
}

// oneLine returns the first line of s, trimmed (Java diagnostics carry
// stack traces).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ---- Services API ----

func (c *client) getService(ctx context.Context, name string) (*Service, error) {
	var s Service
	if err := c.do(ctx, http.MethodGet, "/app/v1/services/"+url.PathEscape(name), nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (c *client) createService(ctx context.Context, s *Service) error {
	return c.do(ctx, http.MethodPost, "/app/v1/services", s, nil)
}

func (c *client) deleteService(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/app/v1/services/"+url.PathEscape(name), nil, nil)
}

func (c *client) flex(ctx context.Context, name, component string, n int) error {
	return c.do(ctx, http.MethodPut, "/app/v1/services/"+url.PathEscape(name)+"/components/"+url.PathEscape(component),
		map[string]int{"number_of_containers": n}, nil)
}

// ---- cluster API ----

// signal asks the NodeManager of a container to signal it
// (GRACEFUL_SHUTDOWN: SIGTERM to the container's processes).
func (c *client) signal(ctx context.Context, containerID, command string) error {
	return c.do(ctx, http.MethodPost, "/ws/v1/cluster/containers/"+url.PathEscape(containerID)+"/signal/"+command, nil, nil)
}

// appReport is the part of /ws/v1/cluster/apps/{id} Egret reads.
type appReport struct {
	App struct {
		ID          string `json:"id"`
		State       string `json:"state"`
		FinalStatus string `json:"finalStatus"`
		Diagnostics string `json:"diagnostics"`
		Queue       string `json:"queue"`
		Priority    int    `json:"priority"`
	} `json:"app"`
}

func (c *client) app(ctx context.Context, id string) (*appReport, error) {
	var r appReport
	if err := c.do(ctx, http.MethodGet, "/ws/v1/cluster/apps/"+url.PathEscape(id), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (c *client) setPriority(ctx context.Context, id string, p int) error {
	return c.do(ctx, http.MethodPut, "/ws/v1/cluster/apps/"+url.PathEscape(id)+"/priority", map[string]int{"priority": p}, nil)
}

// nodeList is /ws/v1/cluster/nodes.
type nodeList struct {
	Nodes *struct {
		Node []struct {
			ID                    string `json:"id"`
			State                 string `json:"state"`
			UsedMemoryMB          int64  `json:"usedMemoryMB"`
			AvailMemoryMB         int64  `json:"availMemoryMB"`
			UsedVirtualCores      int    `json:"usedVirtualCores"`
			AvailableVirtualCores int    `json:"availableVirtualCores"`
		} `json:"node"`
	} `json:"nodes"`
}

// largestNode returns the largest RUNNING NodeManager's total resources.
func (c *client) largestNode(ctx context.Context) (resource, int, error) {
	var nl nodeList
	if err := c.do(ctx, http.MethodGet, "/ws/v1/cluster/nodes", nil, &nl); err != nil {
		return resource{}, 0, err
	}
	var r resource
	n := 0
	if nl.Nodes != nil {
		for _, nd := range nl.Nodes.Node {
			if nd.State != "RUNNING" {
				continue
			}
			n++
			r = maxResource(r, resource{vcores: nd.UsedVirtualCores + nd.AvailableVirtualCores, memoryMB: nd.UsedMemoryMB + nd.AvailMemoryMB})
		}
	}
	return r, n, nil
}

// queueInfo is a queue of the capacity scheduler's /ws/v1/cluster/scheduler.
type queueInfo struct {
	QueueName         string `json:"queueName"`
	QueuePath         string `json:"queuePath"`
	State             string `json:"state"`
	MaximumAllocation *struct {
		Memory int64 `json:"memory"`
		VCores int   `json:"vCores"`
	} `json:"maximumAllocation"`
	Queues *struct {
		Queue []queueInfo `json:"queue"`
	} `json:"queues"`
}

type schedulerInfo struct {
	Scheduler struct {
		SchedulerInfo struct {
			Type string `json:"type"`
			queueInfo
		} `json:"schedulerInfo"`
	} `json:"scheduler"`
}

// leafQueues returns the leaf queues of a capacity scheduler; ok is false
// for another scheduler (whose queues Egret does not check).
func (c *client) leafQueues(ctx context.Context) ([]queueInfo, bool, error) {
	var si schedulerInfo
	if err := c.do(ctx, http.MethodGet, "/ws/v1/cluster/scheduler", nil, &si); err != nil {
		return nil, false, err
	}
	if si.Scheduler.SchedulerInfo.Type != "capacityScheduler" {
		return nil, false, nil
	}
	var leaves []queueInfo
	var walk func(q queueInfo)
	walk = func(q queueInfo) {
		if q.Queues == nil || len(q.Queues.Queue) == 0 {
			leaves = append(leaves, q)
			return
		}
		for _, ch := range q.Queues.Queue {
			walk(ch)
		}
	}
	walk(si.Scheduler.SchedulerInfo.queueInfo)
	return leaves, true, nil
}
