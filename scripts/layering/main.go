package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("C", ".", "the module's root directory")
	flag.Parse()
	os.Exit(run(*dir, allowed, os.Stdout, os.Stderr))
}

// pkg is what go list says of a package.
type pkg struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
	Error      *listError
	DepsErrors []*listError
}

// listError is an error go list reports of a package.
type listError struct {
	Pos, Err string
}

// run checks the module at dir and returns the exit code: 0 clean, 1 a
// violation or an allowance no import needs, 2 the graph could not be
// read.
func run(dir string, allow []allowance, stdout, stderr io.Writer) int {
	pkgs, err := list(dir)
	if err != nil {
		fmt.Fprintf(stderr, "layering: %v\n", err)
		return 2
	}
	problems := check(pkgs, allow)
	for _, p := range problems {
		fmt.Fprintln(stdout, "layering: "+p)
	}
	if len(problems) > 0 {
		fmt.Fprintln(stdout, "layering: see DESIGN.md §3 and scripts/layering/doc.go; a rule broken on purpose goes in allowed (scripts/layering/rules.go) with its reason")
		return 1
	}
	return 0
}

// list reads the packages of the module at dir with go list.
func list(dir string) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Module,Error,DepsErrors", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error == nil && len(p.DepsErrors) > 0 {
			p.Error = p.DepsErrors[0]
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s: %s", p.ImportPath, p.Error.Pos, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 || pkgs[0].Module == nil {
		return nil, errors.New("go list found no package of a module")
	}
	return pkgs, nil
}

// check returns the violations of the module's packages and the
// allowances no import needs, sorted.
func check(pkgs []pkg, allow []allowance) []string {
	used := make([]bool, len(allow))
	var problems []string
	for _, p := range pkgs {
		mod := p.Module.Path
		from, ok := rel(mod, p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(mod, imp)
			if !ok {
				continue
			}
			rule := violation(from, to)
			if rule == "" {
				continue
			}
			if i := allowedAt(allow, from, to); i >= 0 {
				used[i] = true
				continue
			}
			problems = append(problems, fmt.Sprintf("%s imports %s: %s", from, to, rule))
		}
	}
	for i, a := range allow {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("allowed %s → %s (%s) is not needed any more: remove it", a.from, a.to, a.reason))
		}
	}
	sort.Strings(problems)
	return problems
}

// rel is path relative to the module mod; false for a package outside it.
func rel(mod, path string) (string, bool) {
	if path == mod {
		return "", true
	}
	r, ok := strings.CutPrefix(path, mod+"/")
	return r, ok
}

func allowedAt(allow []allowance, from, to string) int {
	for i, a := range allow {
		if a.from == from && a.to == to {
			return i
		}
	}
	return -1
}
