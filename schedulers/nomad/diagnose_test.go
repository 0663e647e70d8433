package nomad

import (
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
)

// TestDiagnose: containers that cannot start are named with the task
// event a real Nomad client records (the package without egret of
// issue 13, a package the client cannot download).
func TestDiagnose(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		f := newFake(t)
		if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(2)); err != nil {
			t.Fatal(err)
		}
		if why, err := newSched(t, schedConfig(f.URL)).Diagnose(ctx, "wordcount"); err != nil || why != "" {
			t.Errorf("Diagnose = %q, %v; want nothing to report", why, err)
		}
	})
	t.Run("package without egret", func(t *testing.T) {
		pkg := tarGz("topology", "topology.defn", "cluster.json")
		f := nomadtest.New(t, nomadtest.WithArtifacts(map[string][]byte{testPackageURI: pkg}))
		job := wordcount(1)
		job.PackageSHA256 = sha256Hex(pkg)
		if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, job); err != nil {
			t.Fatal(err)
		}
		if got := observe(f, "wordcount"); len(got) != 0 {
			t.Errorf("containers %v run without an egret binary", got)
		}
		why, err := newSched(t, schedConfig(f.URL)).Diagnose(ctx, "wordcount")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"container-0, container-1 failed: Driver Failure: failed to launch command with executor",
			`/executor/local/egret/package/egret" could not be found (nomad alloc status `} {
			if !strings.Contains(why, want) {
				t.Errorf("diagnosis %q lacks %q", why, want)
			}
		}
	})
	t.Run("package not downloadable", func(t *testing.T) {
		f := nomadtest.New(t, nomadtest.WithArtifacts(map[string][]byte{}))
		if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(1)); err != nil {
			t.Fatal(err)
		}
		why, err := newSched(t, schedConfig(f.URL)).Diagnose(ctx, "wordcount")
		if err != nil || !strings.Contains(why, `Failed Artifact Download: failed to download artifact "`+testPackageURI+`"`) || !strings.Contains(why, "bad response code: 404") {
			t.Errorf("diagnosis %q, %v", why, err)
		}
	})
}

// TestOneLine: Nomad's multi-line error bodies (this one as a real Nomad
// 1.6.5 agent answered the update of issue 13) become one line.
func TestOneLine(t *testing.T) {
	body := "2 errors occurred:\n\t* Task group container-1 validation failed: 1 error occurred:\n\t* 3 errors occurred:\n" +
		"\t* Invalid health check given: \"\"\n\t* Healthy deadline must be greater than zero: 0s\n" +
		"\t* Minimum healthy time must be less than healthy deadline: 0s > 0s\n\n\n\n\n" +
		"\t* Task group container-2 validation failed: 1 error occurred:\n\t* 3 errors occurred:\n" +
		"\t* Invalid health check given: \"\"\n\t* Healthy deadline must be greater than zero: 0s\n" +
		"\t* Minimum healthy time must be less than healthy deadline: 0s > 0s\n\n\n\n\n\n"
	want := `container-1, container-2: Invalid health check given: ""; Healthy deadline must be greater than zero: 0s; Minimum healthy time must be less than healthy deadline: 0s > 0s`
	if got := oneLine(body); got != want {
		t.Errorf("oneLine =\n%s\nwant\n%s", got, want)
	}
	for body, want := range map[string]string{
		"Permission denied\n":                       "Permission denied",
		"1 error occurred:\n\t* Missing job ID\n\n": "Missing job ID",
		"2 errors occurred:\n\t* Missing job ID\n\t* Task group a validation failed: 1 error occurred:\n\t* bad\n\n\n\n": "Missing job ID; a: bad",
	} {
		if got := oneLine(body); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", body, got, want)
		}
	}
}

// TestAllocationsTurnHealthy: with the prometheus sink on (a metrics
// service with a TCP check nothing may answer), the allocations still
// turn healthy, so a deployment can succeed (issue 13, item 4).
func TestAllocationsTurnHealthy(t *testing.T) {
	f := newFake(t)
	if err := newSched(t, schedConfig(f.URL)).Schedule(ctx, wordcount(2)); err != nil {
		t.Fatal(err)
	}
	if svc := group(t, onlyJob(t, f), "container-1").Services; len(svc) != 1 || len(svc[0].Checks) != 1 {
		t.Fatalf("services %s, want the metrics service with its check", mustJSON(t, svc))
	}
	for _, a := range f.Allocations() {
		if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
			t.Errorf("allocation of %s is not healthy: %s", a.TaskGroup, mustJSON(t, a.DeploymentStatus))
		}
	}
}

// TestCoreAndPackageURIs: what Nomad's artifact getter cannot download is
// refused before anything is registered (issue 13, items 1 and 2).
func TestCoreAndPackageURIs(t *testing.T) {
	for name, tc := range map[string]struct {
		kv   []string
		want string
	}{
		"file core URI":          {[]string{keyCoreURI, "file:///opt/egret/egret"}, "no file scheme"},
		"no egret for the tasks": {[]string{keyCoreBundle, "false"}, "the containers would have no egret binary"},
	} {
		_, err := parseSettings(schedConfig("http://nomad:4646", tc.kv...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
	if _, err := parseSettings(schedConfig("http://nomad:4646", keyCoreBundle, "false", KeyDriver, "docker")); err != nil {
		t.Errorf("docker runs the image's egret: %v", err)
	}
	f := newFake(t)
	job := wordcount(1)
	job.PackageURI = "file:///var/lib/egret/packages/wordcount.tar.gz" // the localfs uploader's
	err := newSched(t, schedConfig(f.URL)).Schedule(ctx, job)
	if err == nil || !strings.Contains(err.Error(), "http with egret serve-packages") || len(f.Requests()) != 0 {
		t.Errorf("a file:// package: %v, %d requests to Nomad", err, len(f.Requests()))
	}
}

// TestUpdateWaitsForDeployment: an update is done when Nomad's deployment
// is; a new container that cannot start fails the update with the reason.
func TestUpdateWaitsForDeployment(t *testing.T) {
	files := map[string][]byte{testPackageURI: testPackage()}
	f := nomadtest.New(t, nomadtest.WithArtifacts(files))
	cfg := schedConfig(f.URL)
	if err := newSched(t, cfg).Schedule(ctx, wordcount(1)); err != nil {
		t.Fatal(err)
	}
	grown := wordcount(2)
	if err := newSched(t, cfg).Update(ctx, grown); err != nil {
		t.Fatalf("update to 2 containers: %v", err)
	}
	delete(files, testPackageURI) // the package server lost the package
	err := newSched(t, cfg).Update(ctx, wordcount(3))
	for _, want := range []string{"deployment ", " failed: Failed due to unhealthy allocations", "container-3 failed: Failed Artifact Download", "bad response code: 404"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("update with a container that cannot start: %v, want %q", err, want)
		}
	}
}

// TestDryRunPlaceholderURI: a dry run whose uploader cannot tell the URI
// still renders the job, with the placeholder.
func TestDryRunPlaceholderURI(t *testing.T) {
	job := wordcount(1)
	job.PackageURI = spi.DryRunPackageURI
	if _, err := JobJSON(job, schedConfig("http://nomad:4646")); err != nil {
		t.Errorf("JobJSON with the dry-run placeholder URI: %v", err)
	}
}
