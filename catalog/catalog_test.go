package catalog_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/egret-stream/egret/catalog"
	"github.com/egret-stream/egret/core/spi"
)

const module = "github.com/egret-stream/egret/"

// TestCatalogLinksEveryBackend: every package that registers a backend
// with core/spi is imported by the catalog, so the CLI, the schema and
// conf/REFERENCE.md know it.
func TestCatalogLinksEveryBackend(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "catalog.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		linked = append(linked, strings.TrimPrefix(p, module))
	}
	registers := map[string]bool{}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || strings.HasSuffix(name, "test") || name == "plugins" || name == "cmd" || name == "examples" || name == "core") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, kind := range []string{"Scheduler", "StateManager", "Uploader", "Packing", "MetricsSink", "CheckpointStorage"} {
			if strings.Contains(string(b), "spi.Register"+kind+"(") {
				registers[filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, "../")))] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(registers) < 10 {
		t.Fatalf("found only %d registering packages: %v", len(registers), registers)
	}
	for p := range registers {
		if !slices.Contains(linked, p) {
			t.Errorf("package %s registers a backend but the catalog does not import it", p)
		}
	}
	for _, kind := range spi.Kinds {
		if len(spi.BackendNames(kind)) == 0 {
			t.Errorf("no built-in %s is linked", spi.KindNoun(kind))
		}
	}
}
