package watchstate

import (
	"reflect"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

func TestDiff(t *testing.T) {
	absent := State{}
	n1 := State{Exists: true, ID: 1}
	for _, tc := range []struct {
		name      string
		prev, cur State
		want      []spi.EventType
	}{
		{"still absent", absent, absent, nil},
		{"created", absent, n1, []spi.EventType{spi.EventCreated}},
		{"deleted", n1, absent, []spi.EventType{spi.EventDeleted}},
		{"recreated", n1, State{Exists: true, ID: 2}, []spi.EventType{spi.EventDeleted, spi.EventCreated}},
		{"data", n1, State{Exists: true, ID: 1, Version: 1}, []spi.EventType{spi.EventDataChanged}},
		{"children", n1, State{Exists: true, ID: 1, Children: 7}, []spi.EventType{spi.EventChildrenChanged}},
		{"both", n1, State{Exists: true, ID: 1, Version: 2, Children: 7}, []spi.EventType{spi.EventDataChanged, spi.EventChildrenChanged}},
		{"unchanged", n1, n1, nil},
	} {
		var got []spi.EventType
		for _, e := range Diff("/p", tc.prev, tc.cur) {
			if e.Path != "/p" {
				t.Errorf("%s: path %q", tc.name, e.Path)
			}
			got = append(got, e.Type)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
