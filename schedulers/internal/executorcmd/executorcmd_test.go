package executorcmd

import (
	"slices"
	"testing"

	"github.com/egret-stream/egret/schedulers/local"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// TestSameAsLocal keeps Args identical to local.ExecutorArgs until the
// local scheduler calls this package.
func TestSameAsLocal(t *testing.T) {
	job := schedulertest.NewJob("t", 2)
	for c := 0; c <= 2; c++ {
		got := Args(job, c, "/w", "/w/cluster.json")
		want := local.ExecutorArgs(job, c, "/w", "/w/cluster.json")
		if !slices.Equal(got, want) {
			t.Errorf("container %d:\n got %q\nwant %q", c, got, want)
		}
	}
}

func TestWithoutEmpty(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"executor", "--a", "1", "--b", "", "--c", "3"}, []string{"executor", "--a", "1", "--c", "3"}},
		{[]string{"executor", "--b", ""}, []string{"executor"}},
		{[]string{"executor", "--a", "--b", "x"}, []string{"executor", "--a", "--b", "x"}},
		{nil, []string{}},
	} {
		if got := WithoutEmpty(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("WithoutEmpty(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
