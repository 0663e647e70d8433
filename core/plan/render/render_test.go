package render_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/plan/render"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

func samplePlan() *plan.PackingPlan {
	unit := plan.Resources{CPU: 1, RAM: gib, Disk: gib}
	half := plan.Resources{CPU: 0.5, RAM: 512 * mib, Disk: gib}
	// Container 2 comes first and its instances are out of order, to show
	// that the output is sorted.
	return &plan.PackingPlan{TopologyID: "wordcount-1a2b", Containers: []plan.Container{
		{ID: 2, Instances: []plan.Instance{
			{Component: "count", TaskID: 5, Index: 1, Resources: half},
			{Component: "sentence", TaskID: 2, Index: 1, Resources: unit},
		}, Required: plan.Resources{CPU: 2.5, RAM: 2*gib + 512*mib, Disk: 3 * gib}},
		{ID: 1, Instances: []plan.Instance{
			{Component: "sentence", TaskID: 1, Index: 0, Resources: unit},
			{Component: "split", TaskID: 3, Index: 0, Resources: unit},
			{Component: "count", TaskID: 4, Index: 0, Resources: half},
		}, Required: plan.Resources{CPU: 3.5, RAM: 3*gib + 512*mib, Disk: 4 * gib}},
	}}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	if err := render.Render(samplePlan(), &buf, render.FormatTable); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.table", buf.Bytes())
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := render.Render(samplePlan(), &buf, render.FormatJSON); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.json", buf.Bytes())
	var back render.Plan
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if want := render.FromPlan(samplePlan()); !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip: %+v, want %+v", back, want)
	}
}

func TestEmptyPlan(t *testing.T) {
	var buf bytes.Buffer
	if err := render.Render(&plan.PackingPlan{TopologyID: "x"}, &buf, render.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"containers": []`) {
		t.Fatalf("empty plan json: %s", buf.String())
	}
}

func TestErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := render.Render(samplePlan(), &buf, "xml"); err == nil || !strings.Contains(err.Error(), `unknown format "xml" (use table or json)`) {
		t.Fatalf("err = %v", err)
	}
	if err := render.Render(nil, &buf, render.FormatTable); err == nil {
		t.Fatal("nil plan accepted")
	}
	if err := render.Render(samplePlan(), failWriter{}, render.FormatTable); err == nil {
		t.Fatal("write error not reported")
	}
	if err := render.Render(samplePlan(), failWriter{}, render.FormatJSON); err == nil {
		t.Fatal("write error not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }
