package instance

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func reportFromHere(m *Metrics, msg string) {
	m.AddException(msg, CallerStack(0), time.Unix(1, 0))
}

// TestExceptionsCountedAndBounded: equal exceptions are counted together,
// distinct ones are bounded, Take empties the list, and the stack starts
// at the reporting call site with no addresses.
func TestExceptionsCountedAndBounded(t *testing.T) {
	var m Metrics
	for range 3 {
		reportFromHere(&m, "boom")
	}
	got := m.TakeExceptions()
	if len(got) != 1 || got[0].Count != 3 || got[0].Message != "boom" {
		t.Fatalf("exceptions %+v, want one counted 3 times", got)
	}
	if first := strings.SplitN(got[0].Stack, "\n", 2)[0]; !strings.HasSuffix(first, "instance.reportFromHere") {
		t.Errorf("stack starts at %q, want reportFromHere\n%s", first, got[0].Stack)
	}
	if strings.Contains(got[0].Stack, "0x") {
		t.Errorf("stack holds addresses:\n%s", got[0].Stack)
	}
	if left := m.TakeExceptions(); len(left) != 0 {
		t.Errorf("after Take: %+v", left)
	}
	for i := range 2 * maxPendingExceptions {
		m.AddException(fmt.Sprintf("error %d", i), "", time.Unix(int64(i), 0))
	}
	got = m.TakeExceptions()
	var total int64
	for _, e := range got {
		total += e.Count
	}
	if len(got) != maxPendingExceptions || total != 2*maxPendingExceptions {
		t.Errorf("%d distinct exceptions counting %d, want %d counting %d", len(got), total, maxPendingExceptions, 2*maxPendingExceptions)
	}
	m.AddException(strings.Repeat("x", 2*maxExceptionMessage), "", time.Unix(1, 0))
	if got := m.TakeExceptions(); len(got[0].Message) != maxExceptionMessage {
		t.Errorf("message of %d bytes kept, bound %d", len(got[0].Message), maxExceptionMessage)
	}
}
