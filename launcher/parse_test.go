package launcher

import (
	"reflect"
	"testing"
)

// TestParseParallelism: component:count (Heron's form) and
// component=count (the form docs/operations.md showed) both parse; other
// forms are refused naming both.
func TestParseParallelism(t *testing.T) {
	got, err := ParseParallelism([]string{"count:4", "split=2"})
	if err != nil || !reflect.DeepEqual(got, map[string]int{"count": 4, "split": 2}) {
		t.Fatalf("ParseParallelism = %v, %v", got, err)
	}
	for _, bad := range []string{"count", "count:x", ":4", "=4", "count 4"} {
		if _, err := ParseParallelism([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
