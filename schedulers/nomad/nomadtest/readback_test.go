package nomadtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// TestReadBackMatchesNomad registers the job a real Nomad v1.6.5 dev agent
// was given (testdata/register-nomad-1.6.5.json, the scheduler's golden
// 1-container job) and compares what the fake reads back with what that
// agent read back (testdata/readback-nomad-1.6.5.json), both decoded as
// the scheduler decodes them (api.Job). Only values that differ between
// any two registrations (indexes, times, status) are left out.
func TestReadBackMatchesNomad(t *testing.T) {
	body, err := os.ReadFile("testdata/register-nomad-1.6.5.json")
	if err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile("testdata/readback-nomad-1.6.5.json")
	if err != nil {
		t.Fatal(err)
	}
	compareReadBack(t, "Nomad 1.6.5", real, registerAndRead(t, New(t).URL, body))
}

// TestReadBackMatchesRealAgent does the same against a real agent, the
// one the real-agent tests run (AgentVersion): the job registered on it
// and on the fake must read back alike.
func TestReadBackMatchesRealAgent(t *testing.T) {
	body, err := os.ReadFile("testdata/register-nomad-1.6.5.json")
	if err != nil {
		t.Fatal(err)
	}
	a := StartAgent(t)
	real := registerAndRead(t, a.Addr, body)
	compareReadBack(t, "Nomad "+AgentVersion, real, registerAndRead(t, New(t).URL, body))
}

// registerAndRead registers the job body at the Nomad HTTP API at addr
// and returns the job as a GET reads it back.
func registerAndRead(t *testing.T, addr string, body []byte) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, addr+"/v1/jobs", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register: %s %s", resp.Status, b)
	}
	resp, err = http.Get(addr + "/v1/job/wordcount-7f3a9c")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ = io.ReadAll(resp.Body)
	return b
}

// compareReadBack reports every leaf in which the fake's read-back
// differs from the real one's.
func compareReadBack(t *testing.T, what string, real, fake []byte) {
	t.Helper()
	want, got := flatten(t, real), flatten(t, fake)
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: Nomad %s, fake %s", k, v, orMissing(got, k)))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: Nomad (missing), fake %s", k, v))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("the fake reads the job back unlike %s:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// flatten decodes a job as api.Job and returns its non-null leaves by
// path (Job.TaskGroups[0].Update.HealthCheck = "checks").
func flatten(t *testing.T, doc []byte) map[string]string {
	t.Helper()
	var j api.Job
	if err := json.Unmarshal(doc, &j); err != nil {
		t.Fatal(err)
	}
	// What differs between two registrations.
	j.CreateIndex, j.ModifyIndex, j.JobModifyIndex, j.SubmitTime, j.Status, j.Stable, j.Version = nil, nil, nil, nil, nil, nil, nil
	b, _ := json.Marshal(j)
	var v any
	_ = json.Unmarshal(b, &v)
	out := map[string]string{}
	var walk func(string, any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(p+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		case nil:
		default:
			b, _ := json.Marshal(x)
			out[p] = string(b)
		}
	}
	walk("Job", v)
	return out
}

func orMissing(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return "(missing)"
}
