package conf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadProperties(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plugin.yaml")
	body := "egret.scheduler.mine.address: http://127.0.0.1:4646\negret:\n  scheduler.mine.namespace: test\n  Mixed: Case\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadProperties(file, []string{"egret.scheduler.mine.namespace=dev", "egret.extra= spaced "})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"egret.scheduler.mine.address":   "http://127.0.0.1:4646",
		"egret.scheduler.mine.namespace": "dev",
		"egret.mixed":                    "Case",
		"egret.extra":                    " spaced ",
	} {
		if cfg[k] != want {
			t.Errorf("%s = %q, want %q (config %v)", k, cfg[k], want, cfg)
		}
	}

	_, err = ReadProperties(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	_, err = ReadProperties("", []string{"novalue", "=x"})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"novalue" is not key=value`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad properties: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("a: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProperties(bad, nil); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("bad yaml: %v", err)
	}
}
