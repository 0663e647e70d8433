package binpack

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

// Operator config keys read by every built-in packing algorithm.
const (
	KeyDefaultCPU        = "egret.packing.default.instance.cpu"
	KeyDefaultRAM        = "egret.packing.default.instance.ram"
	KeyDefaultDisk       = "egret.packing.default.instance.disk"
	KeyPaddingPercentage = "egret.packing.padding.percentage"
	KeyPaddingCPU        = "egret.packing.padding.cpu"
	KeyPaddingRAM        = "egret.packing.padding.ram"
	KeyPaddingDisk       = "egret.packing.padding.disk"
	// The daemons' overhead in every container (executor, metrics
	// manager, stream manager): a base plus the stream manager's queue
	// toward each local instance.
	KeyOverheadCPU            = "egret.packing.overhead.cpu"
	KeyOverheadRAM            = "egret.packing.overhead.ram"
	KeyOverheadRAMPerInstance = "egret.packing.overhead.ram.per.instance"
)

// Byte units.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Defaults of the config keys; they match conf/REFERENCE.md.
var (
	DefaultInstance          = plan.Resources{CPU: 1, RAM: GiB, Disk: GiB}
	DefaultPadding           = plan.Resources{CPU: 1, RAM: GiB, Disk: GiB}
	DefaultPaddingPercentage = 10.0
	// DefaultOverhead: half a core for the stream manager's routing (the
	// executor and metrics manager are idle), and 48 MiB for each of the
	// three daemons (docs/backpressure.md, "Memory bound": a 32 MiB base
	// plus 16 MiB for plans and metrics).
	DefaultOverhead = plan.Resources{CPU: 0.5, RAM: 3 * 48 * MiB}
	// DefaultOverheadPerInstance: the stream manager's queue toward one
	// local instance, egret.stmgr.buffer.max.bytes (8 MiB) counted twice
	// for the garbage collector.
	DefaultOverheadPerInstance = plan.Resources{RAM: 16 * MiB}
)

// DefaultMaxInstances sizes the default container capacity of ffd and rcrr
// in a dimension whose topology.container.max.* is unset: this many default
// instances (Heron's topology.container.max.instances default).
const DefaultMaxInstances = 10

// Settings are the packing settings of the operator config.
type Settings struct {
	// Instance is the resource of an instance whose component sets none.
	Instance plan.Resources
	// Padding is the fixed per-container padding (stream manager, metrics
	// manager, logs).
	Padding plan.Resources
	// PaddingPercentage is the padding as a percentage of the container
	// capacity (ffd, rcrr only); the larger of it and Padding applies.
	PaddingPercentage float64
	// Overhead is what the daemons of a container need besides its
	// instances, OverheadPerInstance what they need more per instance;
	// a container reserves the larger of its padding and
	// Overhead + n × OverheadPerInstance in each dimension (Spec.PadFor).
	Overhead, OverheadPerInstance plan.Resources
}

// ParseSettings reads the packing keys of cfg, applying the defaults. It
// reports every invalid value at once, each naming its key.
func ParseSettings(cfg spi.Config) (Settings, error) {
	s := Settings{Instance: DefaultInstance, Padding: DefaultPadding, PaddingPercentage: DefaultPaddingPercentage,
		Overhead: DefaultOverhead, OverheadPerInstance: DefaultOverheadPerInstance}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	s.Instance.CPU, err = cpuKey(cfg, KeyDefaultCPU, s.Instance.CPU, true)
	add(err)
	s.Instance.RAM, err = bytesKey(cfg, KeyDefaultRAM, s.Instance.RAM, true)
	add(err)
	s.Instance.Disk, err = bytesKey(cfg, KeyDefaultDisk, s.Instance.Disk, true)
	add(err)
	s.Padding.CPU, err = cpuKey(cfg, KeyPaddingCPU, s.Padding.CPU, false)
	add(err)
	s.Padding.RAM, err = bytesKey(cfg, KeyPaddingRAM, s.Padding.RAM, false)
	add(err)
	s.Padding.Disk, err = bytesKey(cfg, KeyPaddingDisk, s.Padding.Disk, false)
	add(err)
	s.Overhead.CPU, err = cpuKey(cfg, KeyOverheadCPU, s.Overhead.CPU, false)
	add(err)
	s.Overhead.RAM, err = bytesKey(cfg, KeyOverheadRAM, s.Overhead.RAM, false)
	add(err)
	s.OverheadPerInstance.RAM, err = bytesKey(cfg, KeyOverheadRAMPerInstance, s.OverheadPerInstance.RAM, false)
	add(err)
	s.PaddingPercentage, err = cfg.Float(KeyPaddingPercentage, s.PaddingPercentage)
	add(err)
	if err == nil && !(s.PaddingPercentage >= 0 && s.PaddingPercentage <= 100) {
		add(fmt.Errorf("config key %s: %q is not a percentage between 0 and 100", KeyPaddingPercentage, cfg[KeyPaddingPercentage]))
	}
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("packing config: %w", errors.Join(errs...))
	}
	return s, nil
}

func cpuKey(cfg spi.Config, key string, def float64, positive bool) (float64, error) {
	v, err := cfg.Float(key, def)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("config key %s: %q is not a finite number", key, cfg[key])
	}
	return v, checkSign(key, cfg[key], v, positive)
}

func bytesKey(cfg spi.Config, key string, def int64, positive bool) (int64, error) {
	raw := strings.TrimSpace(cfg.String(key, ""))
	if raw == "" {
		return def, nil
	}
	if strings.HasPrefix(raw, "-") {
		return 0, fmt.Errorf("config key %s: %q is negative; use a size such as 512MiB or 1GiB", key, raw)
	}
	v, err := topology.ParseBytes(raw)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %w", key, err)
	}
	return v, checkSign(key, raw, float64(v), positive)
}

func checkSign(key, raw string, v float64, positive bool) error {
	switch {
	case positive && v <= 0:
		return fmt.Errorf("config key %s: %q must be greater than 0", key, raw)
	case v < 0:
		return fmt.Errorf("config key %s: %q must not be negative", key, raw)
	}
	return nil
}

// parseSetting parses a topology or component resource setting of
// dimension d. raw is non-empty.
func parseSetting(d Dim, raw string) (float64, error) {
	raw = strings.TrimSpace(raw)
	if d == CPU {
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not a number of cores", raw)
		}
		return f, nil
	}
	if strings.HasPrefix(raw, "-") {
		return 0, fmt.Errorf("%q is negative", raw)
	}
	b, err := topology.ParseBytes(raw)
	if err != nil {
		return 0, err
	}
	return float64(b), nil
}
