package names

import "math"

// Nearest returns the candidate nearest to s by edit distance, when it is
// close enough to be a likely misspelling (at most 2 edits, or a third of
// s's length for longer names), and ok false otherwise. A tie goes to the
// first candidate.
func Nearest(s string, candidates []string) (near string, ok bool) {
	best, d := Closest(s, candidates)
	if len(candidates) == 0 || d > max(2, len(s)/3) {
		return "", false
	}
	return best, true
}

// Closest returns the candidate with the smallest edit distance to s (the
// first on a tie) and that distance, however far; with no candidate the
// distance is math.MaxInt.
func Closest(s string, candidates []string) (closest string, dist int) {
	closest, dist = "", math.MaxInt
	for _, c := range candidates {
		if d := distance(s, c); d < dist {
			closest, dist = c, d
		}
	}
	return closest, dist
}

// distance is the Levenshtein distance of a and b (bytes: names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
