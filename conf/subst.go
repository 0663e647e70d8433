package conf

import (
	"fmt"
	"regexp"
	"strings"
)

// maxVarDepth bounds how deeply variable values may reference further
// variables.
const maxVarDepth = 10

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// builtinVars are the variables Egret defines itself; they take precedence
// over the environment.
var builtinVars = []string{"EGRET_HOME", "CLUSTER", "ROLE", "ENVIRON", "TOPOLOGY", "HOME"}

// substituter expands ${VAR} references. The grammar:
//
//	$$              a literal $
//	${NAME}         the value of NAME, itself expanded; unknown NAME is an error
//	${NAME:-text}   the value of NAME if set, otherwise text (expanded)
//	$ otherwise     a literal $ (so $JAVA_HOME is left for a shell)
//
// A variable in keep is copied verbatim (${TOPOLOGY} before the topology
// name is known).
type substituter struct {
	vars      map[string]string // built-in variables
	keep      map[string]bool
	lookupEnv func(string) (string, bool)
	cache     map[string]string
}

func newSubstituter(vars map[string]string, keep map[string]bool, lookupEnv func(string) (string, bool)) *substituter {
	return &substituter{vars: vars, keep: keep, lookupEnv: lookupEnv, cache: map[string]string{}}
}

// Expand returns s with every reference replaced.
func (s *substituter) Expand(v string) (string, error) {
	return s.expand(v, nil)
}

func (s *substituter) expand(v string, stack []string) (string, error) {
	if !strings.Contains(v, "$") {
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '$' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		switch v[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := matchBrace(v, i+2)
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q (close it with }, or write $$ for a literal $)", v)
			}
			inner := v[i+2 : end]
			name, def, hasDef := strings.Cut(inner, ":-")
			if !varNameRE.MatchString(name) {
				return "", fmt.Errorf("invalid variable name ${%s} (use letters, digits and _)", inner)
			}
			switch val, ok, err := s.lookup(name, stack); {
			case err != nil:
				return "", err
			case s.keep[name]:
				b.WriteString(v[i : end+1])
			case ok:
				b.WriteString(val)
			case hasDef:
				d, err := s.expand(def, stack)
				if err != nil {
					return "", err
				}
				b.WriteString(d)
			default:
				return "", fmt.Errorf("unknown variable ${%s}: not one of %s and not set in the environment (use ${%s:-default} for a fallback)",
					name, "${"+strings.Join(builtinVars, "}, ${")+"}", name)
			}
			i = end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), nil
}

// matchBrace returns the index of the } closing a ${ whose body starts at
// from, allowing nested ${...}; -1 if there is none.
func matchBrace(v string, from int) int {
	depth := 1
	for j := from; j < len(v); j++ {
		switch {
		case v[j] == '$' && j+1 < len(v) && (v[j+1] == '{' || v[j+1] == '$'):
			if v[j+1] == '{' {
				depth++
			}
			j++
		case v[j] == '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// lookup returns the expanded value of variable name.
func (s *substituter) lookup(name string, stack []string) (string, bool, error) {
	if s.keep[name] {
		return "", false, nil
	}
	for i, n := range stack {
		if n == name {
			chain := append(append([]string{}, stack[i:]...), name)
			return "", false, fmt.Errorf("variable cycle: ${%s}", strings.Join(chain, "} -> ${"))
		}
	}
	if len(stack) >= maxVarDepth {
		return "", false, fmt.Errorf("variables nested more than %d deep: ${%s}", maxVarDepth, strings.Join(append(stack, name), "} -> ${"))
	}
	if v, ok := s.cache[name]; ok {
		return v, true, nil
	}
	raw, ok := s.vars[name]
	if !ok {
		raw, ok = s.lookupEnv(name)
	}
	if !ok {
		return "", false, nil
	}
	v, err := s.expand(raw, append(stack, name))
	if err != nil {
		return "", false, err
	}
	s.cache[name] = v
	return v, true, nil
}
