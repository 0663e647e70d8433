package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/egret-stream/egret/catalog" // every built-in backend's keys
	"github.com/egret-stream/egret/conf"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/keysread DIR (the $EGRET_KEYS_READ_DIR the tests ran with)")
		os.Exit(2)
	}
	read, err := keysRead(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "keysread:", err)
		os.Exit(2)
	}
	unread := unreadKeys(read)
	for _, k := range unread {
		fmt.Printf("config key %s is documented but nothing read it in the tests: implement it, test it, or remove it from its schema\n", k)
	}
	if len(unread) > 0 {
		os.Exit(1)
	}
	fmt.Printf("keysread: every one of the %d documented config keys was read\n", len(conf.Schema()))
}

// keysRead returns the union of the keys recorded in dir's files.
func keysRead(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "keys-*"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no keys-* file: were the tests run with %s=%s?", dir, "EGRET_KEYS_READ_DIR", dir)
	}
	read := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if k := strings.TrimSpace(sc.Text()); k != "" {
				read[k] = true
			}
		}
		_ = fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return read, nil
}

// unreadKeys lists the schema's keys absent from read, in schema order.
func unreadKeys(read map[string]bool) []string {
	var out []string
	for _, k := range conf.Schema() {
		if !read[k.Name] {
			out = append(out, k.Name)
		}
	}
	return out
}
