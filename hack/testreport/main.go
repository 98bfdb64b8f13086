// Command testreport reads `go test -json` from its files (standard input
// without one) and prints what a person reads of a test run, as it comes: a
// line per package as go test prints it (ok, FAIL, no test files) and the
// whole output of each test that failed and of each package that failed
// outside a test; then the slowest tests and a closing count. -quiet prints
// only the end. With -times it also writes every package's and test's time
// as tab-separated lines (docs/testing.md's table). It exits 1 when a test
// or package failed, or when the input held no test.
//
//	go test -json ./... | go run ./hack/testreport -slowest 10 -times bin/test-times.tsv
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of test2json.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is a finished test or package.
type result struct {
	Package, Test string
	Elapsed       float64
}

// report is what the stream said so far.
type report struct {
	out io.Writer
	// output buffers each running test's output (package/test) and each
	// package's own (package/), until it passes (dropped) or fails
	// (printed).
	output                  map[string]*strings.Builder
	tests, packages         []result
	passed, failed, skipped int
	failedPackages          int
}

func main() {
	slowest := flag.Int("slowest", 10, "how many of the slowest tests to print")
	times := flag.String("times", "", "write every package's and test's seconds to this file (tab-separated)")
	quiet := flag.Bool("quiet", false, "print only the slowest tests and the count")
	summary := flag.Bool("summary", true, "print the slowest tests and the count at the end")
	flag.Parse()
	r := &report{out: os.Stdout, output: map[string]*strings.Builder{}}
	if *quiet {
		r.out = io.Discard
	}
	if err := r.readAll(flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	r.out = os.Stdout
	if *times != "" {
		if err := r.writeTimes(*times); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
	}
	if *summary {
		r.printSlowest(*slowest)
		fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
	}
	if r.failed > 0 || r.failedPackages > 0 || r.passed == 0 {
		os.Exit(1)
	}
}

// readAll reads the files in order, or standard input.
func (r *report) readAll(files []string) error {
	if len(files) == 0 {
		return r.read(os.Stdin)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = r.read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// read takes the stream line by line; a line that is not an event (a
// build error go test printed as text) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.take(e)
	}
	return sc.Err()
}

func (r *report) take(e event) {
	key := e.Package + "/" + e.Test
	switch e.Action {
	case "output", "build-output":
		b := r.output[key]
		if b == nil {
			b = &strings.Builder{}
			r.output[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		r.finish(e, key)
	}
}

func (r *report) finish(e event, key string) {
	out := r.output[key]
	delete(r.output, key)
	if e.Test != "" {
		switch e.Action {
		case "pass":
			r.passed++
		case "skip":
			r.skipped++
		case "fail":
			r.failed++
			if out != nil {
				fmt.Fprint(r.out, out.String())
			}
		}
		r.tests = append(r.tests, result{e.Package, e.Test, e.Elapsed})
		return
	}
	// The package: go test's own closing line for it is the last of its
	// output ("ok  pkg 1.2s", "FAIL pkg 3.4s", "?  pkg [no test files]").
	text := ""
	if out != nil {
		text = out.String()
	}
	if e.Action == "fail" {
		r.failedPackages++
		// What its tests still running said (a timeout, a panic), then
		// what it said outside any test (a build error).
		for k, b := range r.output {
			if strings.HasPrefix(k, e.Package+"/") {
				fmt.Fprint(r.out, b.String())
				delete(r.output, k)
			}
		}
		fmt.Fprint(r.out, text)
		return
	}
	if e.Action == "pass" {
		r.packages = append(r.packages, result{Package: e.Package, Elapsed: e.Elapsed})
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	fmt.Fprintln(r.out, lines[len(lines)-1])
}

// printSlowest prints the n slowest top-level tests: subtests are counted
// within their parent.
func (r *report) printSlowest(n int) {
	var top []result
	for _, t := range r.tests {
		if !strings.Contains(t.Test, "/") {
			top = append(top, t)
		}
	}
	slices.SortStableFunc(top, func(a, b result) int { return int(b.Elapsed*1000) - int(a.Elapsed*1000) })
	if len(top) > n {
		top = top[:n]
	}
	if len(top) == 0 {
		return
	}
	fmt.Fprintf(r.out, "the %d slowest tests:\n", len(top))
	for _, t := range top {
		fmt.Fprintf(r.out, "  %8s  %s %s\n", (time.Duration(t.Elapsed*1000) * time.Millisecond).String(), t.Package, t.Test)
	}
}

// writeTimes writes "package<TAB>test<TAB>seconds" for every package (an
// empty test) and top-level test, the slowest first.
func (r *report) writeTimes(path string) error {
	rows := slices.Clone(r.packages)
	for _, t := range r.tests {
		if !strings.Contains(t.Test, "/") {
			rows = append(rows, t)
		}
	}
	slices.SortStableFunc(rows, func(a, b result) int { return int(b.Elapsed*1000) - int(a.Elapsed*1000) })
	var b strings.Builder
	for _, row := range rows {
		fmt.Fprintf(&b, "%s\t%s\t%.1f\n", row.Package, row.Test, row.Elapsed)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
