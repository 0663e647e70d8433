package harness

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a benchmark ran.
type Machine struct {
	NProc     int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	// LoadAvg is /proc/loadavg when the benchmark started: other work on
	// the machine disturbs every figure.
	LoadAvg string    `json:"loadavg"`
	Date    time.Time `json:"date"`
}

// DescribeMachine reads the machine description from /proc.
func DescribeMachine() Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Truncate(time.Second)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuinfoField(b, "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal = memTotal(cpuinfoField(b, "MemTotal"))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
	}
	return m
}

// memTotal turns meminfo's "24684092 kB" into "23.5 GiB".
func memTotal(v string) string {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return v
	}
	kb, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return v
	}
	return strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
}

// cpuinfoField returns the value of the first "key : value" line of a
// /proc file.
func cpuinfoField(b []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
