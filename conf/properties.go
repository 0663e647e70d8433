package conf

import (
	"fmt"
	"os"
	"strings"

	"github.com/egret-stream/egret/core/spi"
)

// ReadProperties reads a stand-alone config for a backend, without a
// cluster and without schema checks: a YAML file of keys (flat dotted or
// nested, as in the cluster files) followed by key=value overrides, later
// winning. `egret plugin verify --config FILE --config-property k=v` uses
// it: an external plugin's keys are its own. Values are not substituted.
// The error lists every problem, "; "-separated on one line.
func ReadProperties(file string, overrides []string) (spi.Config, error) {
	cfg := spi.Config{}
	var problems []string
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read config %s: %w", file, err)
		}
		values, ps := readYAML(file, data)
		for _, p := range ps {
			problems = append(problems, p.String())
		}
		for k, v := range values {
			cfg[k] = v.value
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %q is not key=value", OriginProperty, o))
		case k == "" || strings.ContainsAny(k, " \t") || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, ".."):
			problems = append(problems, fmt.Sprintf("%s: %q: %q is not a dotted key", OriginProperty, o, k))
		default:
			cfg[k] = v
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %w", strings.Join(problems, "; "), ErrInvalidConfig)
	}
	return cfg, nil
}
