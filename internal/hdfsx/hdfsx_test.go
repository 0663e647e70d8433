package hdfsx

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

func TestParseURI(t *testing.T) {
	for uri, want := range map[string]Location{
		"hdfs://nn:9000/egret/a/../b.tar.gz": {NameNode: "nn:9000", Path: "/egret/b.tar.gz"},
		"hdfs://nn/p":                        {NameNode: "nn:8020", Path: "/p"},
		"HDFS://10.0.0.1:8020/x":             {NameNode: "10.0.0.1:8020", Path: "/x"},
	} {
		got, err := ParseURI(uri)
		if err != nil || got != want {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v", uri, got, err, want)
		}
	}
	for _, bad := range []string{"http://nn/p", "hdfs:///p", "hdfs://nn", "hdfs://nn/p?x=1", "hdfs://u@nn/p", "hdfs://nn:99999/p", "/local/path"} {
		if got, err := ParseURI(bad); err == nil {
			t.Errorf("ParseURI(%q) = %+v, want an error", bad, got)
		}
	}
	if s := (Location{NameNode: "nn:8020", Path: "/a b"}).String(); s != "hdfs://nn:8020/a%20b" {
		t.Errorf("String() = %q", s)
	}
}

func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{"nn": "nn:8020", " nn:9000 ": "nn:9000", "[::1]:9000": "[::1]:9000"} {
		if got, err := NormalizeAddress(in); err != nil || got != want {
			t.Errorf("NormalizeAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "hdfs://nn:8020", ":8020", "nn:port", "nn/x"} {
		if got, err := NormalizeAddress(bad); err == nil {
			t.Errorf("NormalizeAddress(%q) = %q, want an error", bad, got)
		}
	}
}

func TestUser(t *testing.T) {
	t.Setenv(EnvUser, "hadoopuser")
	if u, _ := User("given"); u != "given" {
		t.Errorf("User(given) = %q", u)
	}
	if u, _ := User(""); u != "hadoopuser" {
		t.Errorf("User(\"\") with $%s = %q", EnvUser, u)
	}
	t.Setenv(EnvUser, "")
	if u, err := User(""); err != nil || u == "" {
		t.Errorf("User(\"\") without $%s = %q, %v; want the OS user", EnvUser, u, err)
	}
}

func TestExplain(t *testing.T) {
	notFound := &os.PathError{Op: "open", Path: "/p", Err: os.ErrNotExist}
	if err := Explain(notFound, "u", "read /p"); !errors.Is(err, spi.ErrNotFound) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Explain(not found) = %v: want spi.ErrNotFound and fs.ErrNotExist", err)
	}
	denied := &os.PathError{Op: "create", Path: "/p", Err: os.ErrPermission}
	err := Explain(denied, "mallory", "write in /d")
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), `HDFS user "mallory" may not write in /d`) {
		t.Errorf("Explain(permission) = %v", err)
	}
}
