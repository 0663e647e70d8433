package cli

import (
	"strings"
	"testing"
)

func TestParseLogTarget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want logTarget
	}{
		{nil, logTarget{task: -1, container: -1}},
		{[]string{"word"}, logTarget{component: "word", task: -1, container: -1}},
		{[]string{"word:3"}, logTarget{component: "word", task: 3, container: -1}},
		{[]string{"container", "0"}, logTarget{task: -1, container: 0}},
		{[]string{"container", "12"}, logTarget{task: -1, container: 12}},
	} {
		got, err := parseLogTarget(tc.args)
		if err != nil || got != tc.want {
			t.Errorf("parseLogTarget(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{"container"}, {"container", "-1"}, {"container", "x"}, {"container", "1", "2"},
		{"word:"}, {"word:-1"}, {"word:x"}, {"word:1234567890"}, {"../x"}, {"a/b"}, {""}, {"word", "count"}, {"wörd"},
	} {
		_, err := parseLogTarget(args)
		var ue usageError
		if err == nil || !asUsage(err, &ue) || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseLogTarget(%q) = %v, want a one-line usage error", args, err)
		}
	}
}

func asUsage(err error, ue *usageError) bool {
	u, ok := err.(usageError)
	*ue = u
	return ok
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in    string
		n     int
		whole bool
		want  string
	}{
		{"a\nb\nc\n", 1, true, "c\n"},
		{"a\nb\nc\n", 2, true, "b\nc\n"},
		{"a\nb\nc\n", 5, true, "a\nb\nc\n"},
		{"a\nb\nc", 1, true, "c"},
		{"a\nb\nc\n", 0, true, ""},
		{"partial\nb\nc\n", 5, false, "b\nc\n"},
		{"partial", 5, false, ""},
	} {
		if got := string(lastLines([]byte(tc.in), tc.n, tc.whole)); got != tc.want {
			t.Errorf("lastLines(%q, %d, %v) = %q, want %q", tc.in, tc.n, tc.whole, got, tc.want)
		}
	}
}

func TestShellLogName(t *testing.T) {
	for _, ok := range []string{"stmgr.log", "instance-word-1.log.2", "a_b"} {
		if err := shellLogName(ok); err != nil {
			t.Errorf("shellLogName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".hidden", "../x", "a/b", "a%2fb", "a\x00", "a b"} {
		if err := shellLogName(bad); err == nil {
			t.Errorf("shellLogName(%q) accepted", bad)
		}
	}
}
