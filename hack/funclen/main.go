// Command funclen fails when a function is longer than its part allows:
// arguments are DIR=LIMIT (lines, from func to closing brace, test files and
// generated code excluded). It prints the longest functions first.
//
// usage: go run ./hack/funclen hub=80 agent=80 operator=80 e2e=120
package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

type function struct {
	name, pos    string
	lines, limit int
}

func main() {
	var all []function
	for _, arg := range os.Args[1:] {
		dir, lim, ok := strings.Cut(arg, "=")
		limit, err := strconv.Atoi(lim)
		if !ok || err != nil || limit < 1 {
			fmt.Fprintf(os.Stderr, "funclen: %q: want DIR=LIMIT, e.g. hub=80\n", arg)
			os.Exit(2)
		}
		fns, err := functions(dir, limit)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
		all = append(all, fns...)
	}
	slices.SortFunc(all, func(a, b function) int { return cmp.Compare(b.lines, a.lines) })
	over := 0
	for _, f := range all {
		if f.lines > f.limit {
			over++
			fmt.Printf("%s: %s is %d lines (at most %d here): split it into phases or helpers\n", f.pos, f.name, f.lines, f.limit)
		}
	}
	if over > 0 {
		os.Exit(1)
	}
	if len(all) > 0 {
		fmt.Printf("funclen: every function within its limit (longest: %s, %d lines, %s)\n", all[0].name, all[0].lines, all[0].pos)
	}
}

// functions are the functions declared in dir's Go files (tests and
// generated code excluded), with their lengths.
func functions(dir string, limit int) ([]function, error) {
	var out []function
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			strings.HasPrefix(filepath.Base(p), "zz_generated") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
				out = append(out, function{name: fn.Name.Name, pos: fmt.Sprintf("%s:%d", p, start.Line),
					lines: end.Line - start.Line + 1, limit: limit})
			}
		}
		return nil
	})
	return out, err
}
