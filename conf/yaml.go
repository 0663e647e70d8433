package conf

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// viperDelimiter separates nested map levels inside viper, so that a flat
// dotted key ("egret.statemgr.root.path") and a nested one
// (egret: {statemgr: {root.path: ...}}) never collide on viper's path
// lookup. Both are flattened to dots afterwards.
const viperDelimiter = "::"

// fileValue is one key read from a file.
type fileValue struct {
	value string
	line  int
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.+)`)

// readYAML parses one config file with a fresh viper instance and returns
// its keys flattened with dots and lower-cased.
func readYAML(origin string, data []byte) (map[string]fileValue, []Problem) {
	v := viper.NewWithOptions(viper.KeyDelimiter(viperDelimiter))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, yamlProblems(origin, err)
	}
	lines := keyLines(data)
	out := map[string]fileValue{}
	var problems []Problem
	keys := v.AllKeys()
	sort.Strings(keys)
	for _, k := range keys {
		flat := strings.ReplaceAll(k, viperDelimiter, ".")
		line := lines[flat]
		s, err := stringify(v.Get(k))
		if err != nil {
			problems = append(problems, Problem{File: origin, Line: line, Key: flat, Message: err.Error()})
			continue
		}
		if _, dup := out[flat]; dup {
			problems = append(problems, Problem{File: origin, Line: line, Key: flat,
				Message: "set twice in this file (once as a flat dotted key, once as nested maps); keep one"})
			continue
		}
		out[flat] = fileValue{value: s, line: line}
	}
	return out, problems
}

// yamlProblems turns a parse error into one problem per reported line.
func yamlProblems(origin string, err error) []Problem {
	var pe viper.ConfigParseError
	if errors.As(err, &pe) {
		err = pe.Unwrap()
	}
	var out []Problem
	for _, m := range yamlLineRE.FindAllStringSubmatch(err.Error(), -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, Problem{File: origin, Line: n, Message: "YAML syntax error: " + strings.TrimSpace(m[2])})
	}
	if out == nil {
		out = []Problem{{File: origin, Message: "YAML syntax error: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	return out
}

// stringify renders a decoded YAML value as a config string.
func stringify(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case []any:
		items := make([]string, 0, len(x))
		for _, e := range x {
			switch e.(type) {
			case []any, map[string]any, map[any]any:
				return "", errors.New("a list may hold only plain values (strings, numbers, booleans)")
			}
			s, err := stringify(e)
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return strings.Join(items, ","), nil
	case map[string]any, map[any]any:
		return "", errors.New("a map is not a value here")
	}
	return fmt.Sprint(v), nil
}

// keyLines maps each flattened leaf key of a YAML document to the line of
// its key; best effort (used only to point problems at a line).
func keyLines(data []byte) map[string]int {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	out := map[string]int{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, prefix)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, val := n.Content[i], n.Content[i+1]
				name := strings.ToLower(k.Value)
				if prefix != "" {
					name = prefix + "." + name
				}
				if val.Kind == yaml.MappingNode {
					walk(val, name)
				} else if _, seen := out[name]; !seen {
					out[name] = k.Line
				}
			}
		}
	}
	walk(&doc, "")
	return out
}
