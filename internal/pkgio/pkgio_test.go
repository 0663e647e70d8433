package pkgio

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"wc-alice-0123456789ab.tar.gz": true,
		"A_b.c-9":                      true,
		"":                             false,
		".":                            false,
		"..":                           false,
		".hidden":                      false,
		TempPrefix + "x":               false,
		"a/b":                          false,
		`a\b`:                          false,
		"a b":                          false,
		"a\x00b":                       false,
		"café":                         false,
		strings.Repeat("a", 255):       true,
		strings.Repeat("a", 256):       false,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v; want ok=%v", name, err, ok)
		}
	}
}

func TestObjectName(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	got, err := ObjectName(spi.Package{Topology: "wc", Role: "alice"}, sha)
	if err != nil || got != "wc-alice-abababababab.tar.gz" {
		t.Fatalf("ObjectName = %q, %v", got, err)
	}
	for _, p := range []spi.Package{{Role: "a"}, {Topology: "t"}, {Topology: "../t", Role: "a"}, {Topology: "t", Role: "a b"}} {
		if _, err := ObjectName(p, sha); err == nil {
			t.Errorf("ObjectName(%+v) accepted", p)
		}
	}
}

func TestNormalizeSHA256(t *testing.T) {
	up := strings.Repeat("AB", 32)
	if got, err := NormalizeSHA256(" " + up + " "); err != nil || got != strings.ToLower(up) {
		t.Fatalf("NormalizeSHA256 = %q, %v", got, err)
	}
	for _, bad := range []string{"ab", strings.Repeat("g", 64), strings.Repeat("a", 65)} {
		if _, err := NormalizeSHA256(bad); err == nil {
			t.Errorf("NormalizeSHA256(%q) accepted", bad)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	ctx := context.Background()
	data := []byte("0123456789")
	sha, n, err := WriteFile(ctx, p, bytes.NewReader(data), "", 10, 0o640)
	if err != nil || n != 10 || len(sha) != 64 {
		t.Fatalf("WriteFile at the limit = %s, %d, %v", sha, n, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %s", fi.Mode())
	}
	if _, _, err := WriteFile(ctx, filepath.Join(dir, "g"), bytes.NewReader(data), "", 9, 0o644); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, _, err := WriteFile(ctx, filepath.Join(dir, "h"), bytes.NewReader(data), strings.Repeat("0", 64), 0, 0o644); !errors.Is(err, ErrChecksumMismatch) {
		t.Errorf("mismatch: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := WriteFile(cctx, filepath.Join(dir, "i"), bytes.NewReader(data), "", 0, 0o644); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
