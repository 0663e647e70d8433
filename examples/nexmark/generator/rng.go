package generator

import (
	"math"
	"math/bits"
)

// rng is SplitMix64: a tiny, fast random stream seeded per event, so that
// an event is a pure function of (seed, id).
type rng struct{ s uint64 }

func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func newRNG(seed uint64, id int64) rng {
	return rng{s: mix(seed*0x9e3779b97f4a7c15+0x632be59bd9b4e019) ^ mix(uint64(id)+0x2545f4914f6cdd1d)}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a uniform value in [0, n) for n > 0 (Lemire's multiply).
func (r *rng) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// float returns a uniform value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// price is a log-uniform price in cents between 100 and 100,000,000.
func (r *rng) price() int64 { return int64(math.Round(math.Pow(10, r.float()*6) * 100)) }

// str appends a random string of 3 to maxLen-1 letters, with about one
// character in 13 the special one, trimmed of spaces at both ends.
func (r *rng) str(dst []byte, maxLen int64, special byte) []byte {
	n := minStringLength + r.intn(maxLen-minStringLength)
	start := len(dst)
	for ; n > 0; n-- {
		if r.intn(13) == 0 {
			dst = append(dst, special)
		} else {
			dst = append(dst, byte('a'+r.intn(26)))
		}
	}
	// Trim the special character at both ends when it is a space.
	if special == ' ' {
		s := dst[start:]
		i, j := 0, len(s)
		for i < j && s[i] == ' ' {
			i++
		}
		for j > i && s[j-1] == ' ' {
			j--
		}
		dst = append(dst[:start], s[i:j]...)
	}
	return dst
}

// exact appends exactly n random letters.
func (r *rng) exact(dst []byte, n int64) []byte {
	for ; n > 0; n-- {
		dst = append(dst, byte('a'+r.intn(26)))
	}
	return dst
}

// extra returns the padding that brings an event of size have to about
// avg bytes: avg-have bytes ±20%, or nothing when have already exceeds avg.
func (r *rng) extra(dst []byte, have, avg int) []byte {
	if have > avg {
		return dst
	}
	want := int64(avg - have)
	delta := int64(math.Round(float64(want) * 0.2))
	size := want - delta
	if delta > 0 {
		size += r.intn(2 * delta)
	}
	return r.exact(dst, size)
}
