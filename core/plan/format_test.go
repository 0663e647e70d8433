package plan

import "testing"

func TestFormat(t *testing.T) {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {100, "100 B"}, {kib, "1 KiB"}, {512 * mib, "512 MiB"}, {gib, "1 GiB"},
		{gib + gib/2, "1.5 GiB"}, {gib + gib/3, "1.33 GiB"}, {3 << 40, "3 TiB"}, {-gib, "-1 GiB"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := FormatCPU(0.1 + 0.2); got != "0.3" {
		t.Errorf("FormatCPU = %q", got)
	}
}
