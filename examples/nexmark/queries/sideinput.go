package queries

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// SideInputRows is the size of q13's generated side input.
const SideInputRows = 10_000

// SideInput is q13's generated side input: for every key below
// SideInputRows a value derived from the key and the seed.
func SideInput(seed uint64) map[int64]string {
	m := make(map[int64]string, SideInputRows)
	for k := int64(0); k < SideInputRows; k++ {
		m[k] = "value-" + strconv.FormatUint((uint64(k)+1)*0x9e3779b97f4a7c15^seed, 36)
	}
	return m
}

// ReadSideInput reads a side input file: one "key<TAB>value" line per
// row, keys in [0, SideInputRows).
func ReadSideInput(path string) (map[int64]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("q13 side input: %w", err)
	}
	defer f.Close()
	m := map[int64]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		key, err := strconv.ParseInt(k, 10, 64)
		if !ok || err != nil || key < 0 || key >= SideInputRows {
			return nil, fmt.Errorf("q13 side input %s:%d: want \"key<TAB>value\" with a key in [0, %d)", path, line, SideInputRows)
		}
		m[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("q13 side input %s: %w", path, err)
	}
	return m, nil
}

func init() {
	register(&Query{Name: "q13", Title: "bounded side input join: bids enriched from a file by auction mod 10,000", build: func(p *Plan) {
		p.bidQueryWith(func(ctx api.Context) (func(api.Tuple, *Results), error) {
			var side map[int64]string
			if path := ctx.Config(KeySideInput); path != "" {
				var err error
				if side, err = ReadSideInput(path); err != nil {
					return nil, err
				}
			} else {
				st, err := source.ReadSettings(ctx.Config)
				if err != nil {
					return nil, err
				}
				side = SideInput(st.Gen.Seed)
			}
			return func(t api.Tuple, res *Results) {
				a := t.Int64(bAuction)
				if v, ok := side[a%SideInputRows]; ok {
					res.Row(a, t.Int64(bBidder), t.Int64(bPrice), t.Int64(bDateTime), v)
				}
			}, nil
		})
	}})
}
