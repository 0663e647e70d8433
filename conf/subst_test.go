package conf

import (
	"strings"
	"testing"
)

func TestSubstitution(t *testing.T) {
	vars := map[string]string{"CLUSTER": "nomad", "ROLE": "ops", "HOME": "/home/u", "EGRET_HOME": "${HOME}/.egret"}
	env := map[string]string{
		"A": "${B}/a", "B": "${C}/b", "C": "c",
		"SELF": "x${SELF}", "X1": "${X2}", "X2": "${X3}", "X3": "${X1}",
		"CLUSTER": "from-env", "DOLLAR": "a$$b", "EMPTY": "",
	}
	// A chain deeper than the limit.
	for i := 0; i < maxVarDepth+1; i++ {
		env["D"+string(rune('a'+i))] = "${D" + string(rune('a'+i+1)) + "}"
	}
	env["D"+string(rune('a'+maxVarDepth+1))] = "end"
	cases := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${EGRET_HOME}/state/${CLUSTER}/${ROLE}", want: "/home/u/.egret/state/nomad/ops"},
		{in: "${A}", want: "c/b/a"},
		{in: "${CLUSTER}", want: "nomad"}, // built-ins win over the environment
		{in: "$${HOME}", want: "${HOME}"},
		{in: "a$$b", want: "a$b"},
		{in: "${DOLLAR}", want: "a$b"},
		{in: "$JAVA_HOME/bin", want: "$JAVA_HOME/bin"},
		{in: "cost: 5$", want: "cost: 5$"},
		{in: "${TOPOLOGY}/x", want: "${TOPOLOGY}/x"}, // kept until the topology is known
		{in: "${EMPTY}", want: ""},
		{in: "${UNSET:-fallback}", want: "fallback"},
		{in: "${UNSET:-${HOME}/x}", want: "/home/u/x"},
		{in: "${C:-fallback}", want: "c"},
		{in: "${UNSET:-}", want: ""},
		{in: "${UNSET}", err: "unknown variable ${UNSET}"},
		{in: "x/${A}/${UNSET}", err: "unknown variable ${UNSET}"},
		{in: "${SELF}", err: "variable cycle: ${SELF} -> ${SELF}"},
		{in: "${X1}", err: "variable cycle: ${X1} -> ${X2} -> ${X3} -> ${X1}"},
		{in: "${Da}", err: "variables nested more than 10 deep"},
		{in: "${HOME", err: "unterminated ${"},
		{in: "${}", err: "invalid variable name ${}"},
		{in: "${a-b}", err: "invalid variable name ${a-b}"},
	}
	for _, tc := range cases {
		s := newSubstituter(vars, map[string]bool{"TOPOLOGY": true}, envOf(env))
		got, err := s.Expand(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Expand(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
