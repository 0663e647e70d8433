package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/proto/egretpb"
)

// health is what the topology manager says about one container.
type health struct {
	// registered: the container's stream manager is in a complete
	// physical plan.
	registered bool
	tasks      map[int]taskHealth
	// exceptions counts the exceptions the container's instances
	// reported; lastException is the latest one's message.
	exceptions    int64
	lastException string
}

// taskHealth is the latest report of one instance.
type taskHealth struct {
	reported bool
	nanos    int64
	// start is the reporting process's start time (process.start.unix).
	start float64
	// moved sums the tuples the process's component executed, emitted
	// and acked: the user code's work (not what reached its gateway, which
	// a component that failed to prepare receives too).
	moved float64
}

// getTManager decodes the topology manager's GET path into v.
func getTManager(ctx context.Context, loc *egretpb.TManagerLocation, path string, v any) error {
	u := fmt.Sprintf("http://%s:%d%s", loc.GetHost(), loc.GetHttpPort(), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("bad %s answer: %w", path, err)
	}
	return nil
}

// readHealth reads container c's health from the topology manager's
// /healthz, /stats and /exceptions; tasks maps its task ids to their
// components.
func readHealth(ctx context.Context, loc *egretpb.TManagerLocation, c int, tasks map[int]string) (*health, error) {
	var hz struct {
		Complete   bool  `json:"complete"`
		Registered []int `json:"registered"`
	}
	if err := getTManager(ctx, loc, "/healthz", &hz); err != nil {
		return nil, err
	}
	var st struct {
		Components map[string]struct {
			Tasks map[string]struct {
				UnixNanos int64              `json:"unix_nanos"`
				Metrics   map[string]float64 `json:"metrics"`
			} `json:"tasks"`
		} `json:"components"`
	}
	if err := getTManager(ctx, loc, "/stats", &st); err != nil {
		return nil, err
	}
	var exc struct {
		Exceptions map[string][]struct {
			Container int32  `json:"container"`
			Message   string `json:"message"`
			Count     int64  `json:"count"`
			LastNanos int64  `json:"last_unix_nanos"`
		} `json:"exceptions"`
	}
	if err := getTManager(ctx, loc, "/exceptions", &exc); err != nil {
		return nil, err
	}
	h := &health{registered: hz.Complete && slices.Contains(hz.Registered, c), tasks: map[int]taskHealth{}}
	for task, comp := range tasks {
		r, ok := st.Components[comp].Tasks[strconv.Itoa(task)]
		if !ok {
			h.tasks[task] = taskHealth{}
			continue
		}
		m := r.Metrics
		h.tasks[task] = taskHealth{reported: true, nanos: r.UnixNanos, start: m["process.start.unix"],
			moved: m["instance.executed"] + m["instance.emitted"] + m["instance.acked"]}
	}
	var last int64
	for _, list := range exc.Exceptions {
		for _, e := range list {
			if int(e.Container) != c {
				continue
			}
			h.exceptions += e.Count
			if e.LastNanos > last {
				last, h.lastException = e.LastNanos, e.Message
			}
		}
	}
	return h, nil
}

// healthWait decides when a restarted container is healthy.
type healthWait struct {
	c      int
	tasks  map[int]string
	before *health
	since  time.Time
	active bool
	maxExc int
	// seen is the start time of each task's first new process.
	seen map[int]float64
}

// check says whether the container is healthy now, why not, and whether
// it is beyond hope (an instance restarted again, an exception storm).
func (w *healthWait) check(now *health) (ok bool, why string, fatal bool) {
	if n := now.exceptions - w.before.exceptions; n > int64(w.maxExc) {
		return false, fmt.Sprintf("an exception storm: its instances reported %d exceptions since the restart (at most %d allowed), the latest: %s", n, w.maxExc, oneLine(now.lastException)), true
	}
	var waiting []string
	for _, task := range sortedTasks(w.tasks) {
		what := fmt.Sprintf("%s:%d", w.tasks[task], task)
		t, old := now.tasks[task], w.before.tasks[task]
		// A new process: another start time than before the restart (or,
		// with no report from before, one after the restart, less a
		// margin for the clocks of other hosts).
		fresh := t.reported && t.start > 0 && t.nanos > w.since.UnixNano() &&
			((old.reported && t.start != old.start) || (!old.reported && t.start > float64(w.since.Add(-2*time.Second).UnixNano())/1e9))
		if !fresh {
			waiting = append(waiting, what+" has not reported from a new process")
			continue
		}
		if first, ok := w.seen[task]; !ok {
			w.seen[task] = t.start
		} else if first != t.start {
			return false, fmt.Sprintf("instance %s restarted after the upgrade (did it crash? egret logs shows why)", what), true
		}
		if w.active && old.moved > 0 && t.moved == 0 {
			waiting = append(waiting, what+" moves no tuples yet")
		}
	}
	if !now.registered {
		waiting = append([]string{fmt.Sprintf("the stream manager of container %d is not in a complete physical plan", w.c)}, waiting...)
	}
	if len(waiting) > 0 {
		if len(waiting) > 3 {
			waiting = append(waiting[:3], fmt.Sprintf("and %d more", len(waiting)-3))
		}
		return false, strings.Join(waiting, ", "), false
	}
	return true, "", false
}

func sortedTasks(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func intList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}
