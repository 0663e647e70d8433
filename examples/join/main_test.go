package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/examples/internal/exampletest"
)

// expected joins the bounded events by brute force: per ad and 1 s
// window, every impression with every click, plus the unmatched side for
// outer kinds.
func expected(n int, kind streamlet.JoinType) []string {
	imps, clicks := Events(n)
	type wk struct {
		ad    string
		start int64
	}
	is, cs := map[wk][]Impression{}, map[wk][]Click{}
	for _, i := range imps[:len(imps)-1] {
		k := wk{i.Ad, i.At - i.At%1000}
		is[k] = append(is[k], i)
	}
	for _, c := range clicks[:len(clicks)-1] {
		k := wk{c.Ad, c.At - c.At%1000}
		cs[k] = append(cs[k], c)
	}
	var out []string
	for k, il := range is {
		for i := range il {
			for j := range cs[k] {
				out = append(out, Format(k.ad, &il[i], &cs[k][j]))
			}
			if len(cs[k]) == 0 && (kind == streamlet.Left || kind == streamlet.FullOuter) {
				out = append(out, Format(k.ad, &il[i], nil))
			}
		}
	}
	for k, cl := range cs {
		if len(is[k]) == 0 && (kind == streamlet.Right || kind == streamlet.FullOuter) {
			for j := range cl {
				out = append(out, Format(k.ad, nil, &cl[j]))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestJoinOnARealProcess runs the binary with --local for each join kind
// and waits until it printed exactly the brute-force join.
func TestJoinOnARealProcess(t *testing.T) {
	const n = 1500
	bin := exampletest.Build(t, ".")
	for _, kind := range []string{"inner", "left", "right", "outer"} {
		t.Run(kind, func(t *testing.T) {
			want := expected(n, Kinds[kind])
			p := exampletest.Start(t, bin, "--events", fmt.Sprint(n), "--kind", kind, "--local")
			p.WaitFor("every joined pair", time.Minute, func(lines []string) bool {
				return len(exampletest.Prefixed(lines, "joined ")) >= len(want)
			})
			lines := p.Stop()
			var got []string
			for _, l := range lines {
				if strings.HasPrefix(l, "joined ") {
					got = append(got, l)
				}
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got %d pairs, want %d\n got %.300v\nwant %.300v", len(got), len(want), got, want)
			}
			t.Logf("%s join: %d pairs", kind, len(want))
		})
	}
}
