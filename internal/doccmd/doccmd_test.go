package doccmd

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const sample = "# Guide\n\nRun `egret list local` first.\n\n```sh\n" +
	"go build -o bin/egret ./cmd/egret\n" +
	"# a comment\n" +
	"bin/egret submit local ./examples/wordcount \\\n  --containers 2   # launches\n" +
	"bin/egret metrics local wordcount > out.txt; egret kill local wordcount || true\n" +
	"```\n"

func TestBlockAndCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guide.md")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	block, err := Block(path, "go build")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"go build -o bin/egret ./cmd/egret",
		"bin/egret submit local ./examples/wordcount --containers 2   # launches",
		"bin/egret metrics local wordcount > out.txt; egret kill local wordcount || true",
	}
	if !reflect.DeepEqual(block, want) {
		t.Errorf("Block:\n got %q\nwant %q", block, want)
	}
	if _, err := Block(path, "egret nothing"); err == nil {
		t.Error("Block of a missing block: no error")
	}
	cmds, err := Commands(path, "guide.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3 || cmds[0].Full || cmds[0].Line != "egret list local" || !cmds[1].Full || cmds[1].Where != "guide.md:8" {
		t.Fatalf("Commands: %+v", cmds)
	}
	got := Split(cmds[2].Line)
	if !reflect.DeepEqual(got, [][]string{{"metrics", "local", "wordcount"}, {"kill", "local", "wordcount"}}) {
		t.Errorf("Split(%q) = %q: the redirection and || true are not arguments", cmds[2].Line, got)
	}
	if got := Split("egret update <cluster> <topology> --component-parallelism c=N"); !reflect.DeepEqual(got, [][]string{{"update", "local", "wordcount", "--component-parallelism", "c=4"}}) {
		t.Errorf("placeholders: %q", got)
	}
}
