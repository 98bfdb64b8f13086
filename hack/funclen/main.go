// Command funclen fails when a function or a file is longer than its part
// allows. DIR=LIMIT limits the functions of DIR (lines, from func to closing
// brace, test files and generated code excluded); file:DIR=LIMIT limits its
// Go files, tests included (generated code excluded). It prints the longest
// first.
//
// usage: go run ./hack/funclen hub=80 agent=80 file:hub=450 file:e2e=600
package main

import (
	"bytes"
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
		spec, isFile := strings.CutPrefix(arg, "file:")
		dir, lim, ok := strings.Cut(spec, "=")
		limit, err := strconv.Atoi(lim)
		if !ok || err != nil || limit < 1 {
			fmt.Fprintf(os.Stderr, "funclen: %q: want DIR=LIMIT or file:DIR=LIMIT, e.g. hub=80\n", arg)
			os.Exit(2)
		}
		measure := functions
		if isFile {
			measure = files
		}
		fns, err := measure(dir, limit)
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
			if f.name == "" {
				fmt.Printf("%s is %d lines (at most %d here): split it by concern\n", f.pos, f.lines, f.limit)
				continue
			}
			fmt.Printf("%s: %s is %d lines (at most %d here): split it into phases or helpers\n", f.pos, f.name, f.lines, f.limit)
		}
	}
	if over > 0 {
		os.Exit(1)
	}
	if i := slices.IndexFunc(all, func(f function) bool { return f.name != "" }); i >= 0 {
		fmt.Printf("funclen: every function within its limit (longest: %s, %d lines, %s)\n", all[i].name, all[i].lines, all[i].pos)
	}
	if i := slices.IndexFunc(all, func(f function) bool { return f.name == "" }); i >= 0 {
		fmt.Printf("funclen: every file within its limit (longest: %s, %d lines)\n", all[i].pos, all[i].lines)
	}
}

// generated reports whether p is generated code.
func generated(p string) bool { return strings.HasPrefix(filepath.Base(p), "zz_generated") }

// files are dir's Go files (generated code excluded), with their lengths;
// their name is empty.
func files(dir string, limit int) ([]function, error) {
	var out []function
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || generated(p) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, function{pos: p, lines: bytes.Count(b, []byte("\n")), limit: limit})
		return nil
	})
	return out, err
}

// functions are the functions declared in dir's Go files (tests and
// generated code excluded), with their lengths.
func functions(dir string, limit int) ([]function, error) {
	var out []function
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			generated(p) {
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
