package hardware

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/ext"
)

// Limits of a requirement: its length, and its cost as CEL estimates it
// over a view at its largest (MaxDisks, MaxNICs, MaxGPUs, MaxString), the
// same measure ValidatingAdmissionPolicy uses. One exists() over the disks
// costs about 650; an exists() over the NICs within one over the disks
// about 37 000, and is refused. CEL charges string functions per
// character (lowerAscii() on each disk's type: about 19 000 in all), so
// that a test of every list with one string function each fits.
const (
	MaxLength = 2048
	MaxCost   = 25000
	// MaxString is the longest string the estimate assumes (a model).
	MaxString = 256
)

// Requirement is a claim's requirement on a host's hardware: a CEL
// expression over the variable host (a View) that yields a bool, such as
//
//	host.cpu.count >= 64 && host.disks.exists(d, d.type == "NVME" && d.sizeGiB >= 1000)
type Requirement struct {
	expr  string
	prg   cel.Program
	terms []term
	// met remembers, per cluster and profile name, whether the profile
	// meets it (MeetsProfile): a fleet has a few profiles and many pools.
	met sync.Map
	// metN counts met's entries, which it bounds at metMax.
	metN atomic.Int32
}

// metMax bounds the profiles a requirement remembers; then it starts over.
const metMax = 4096

// term is one of the requirement's top-level && terms, to say what a host
// lacks: its text, and for a comparison of a host field, that field.
type term struct {
	text  string
	prg   cel.Program
	field cel.Program // nil: not a comparison of a field of host
}

// celEnv is the one CEL environment of requirements: host, a View.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[View](), ext.ParseStructTag("json")),
		cel.Variable("host", cel.ObjectType("v1alpha1.HardwareView")),
		ext.Strings(),
		// The terms of a requirement are printed back (Lacks), macros too.
		cel.EnableMacroCallTracking(),
	)
})

// Parse checks and compiles a requirement; its error says what to fix.
func Parse(expr string) (*Requirement, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("the requirement is empty: write a CEL expression over host, such as host.cpu.count >= 32")
	}
	if len(expr) > MaxLength {
		return nil, fmt.Errorf("the requirement is %d bytes long: at most %d", len(expr), MaxLength)
	}
	e, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("the requirement does not compile: %s (host has cpu, memoryMiB, disks, nics, gpus and system; docs/service.md lists their fields)",
			strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("the requirement yields %s: it must yield a bool (true: the host meets it)", ast.OutputType())
	}
	est, err := e.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, fmt.Errorf("the requirement's cost cannot be estimated: %w", err)
	}
	if est.Max > MaxCost {
		return nil, fmt.Errorf("the requirement may cost %d to evaluate on a host, more than %d: avoid exists() within exists(), or test fewer lists", est.Max, MaxCost)
	}
	prg, err := e.Program(ast, cel.CostLimit(MaxCost))
	if err != nil {
		return nil, fmt.Errorf("the requirement does not compile: %w", err)
	}
	terms, err := termsOf(e, ast.NativeRep().Expr(), ast.NativeRep().SourceInfo())
	if err != nil {
		return nil, err
	}
	return &Requirement{expr: expr, prg: prg, terms: terms}, nil
}

// termsOf splits an expression at its top-level &&, and compiles each
// term (and the host field a comparison term reads) on its own.
func termsOf(e *cel.Env, x celast.Expr, info *celast.SourceInfo) ([]term, error) {
	if x.Kind() == celast.CallKind && x.AsCall().FunctionName() == operators.LogicalAnd {
		var out []term
		for _, arg := range x.AsCall().Args() {
			t, err := termsOf(e, arg, info)
			if err != nil {
				return nil, err
			}
			out = append(out, t...)
		}
		return out, nil
	}
	text, err := cel.ExprToString(x, info)
	if err != nil {
		return nil, err
	}
	t := term{text: text}
	if t.prg, err = program(e, text); err != nil {
		return nil, err
	}
	if x.Kind() == celast.CallKind && comparisons[x.AsCall().FunctionName()] {
		for _, arg := range x.AsCall().Args() {
			if hostField(arg) {
				field, err := cel.ExprToString(arg, info)
				if err != nil {
					return nil, err
				}
				if t.field, err = program(e, field); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	return []term{t}, nil
}

var comparisons = map[string]bool{
	operators.Less: true, operators.LessEquals: true, operators.Greater: true, operators.GreaterEquals: true,
	operators.Equals: true, operators.NotEquals: true,
}

// hostField reports whether x is host.a.b..., or the size of such a list.
func hostField(x celast.Expr) bool {
	switch x.Kind() {
	case celast.SelectKind:
		op := x.AsSelect().Operand()
		return op.Kind() == celast.IdentKind && op.AsIdent() == "host" || hostField(op)
	case celast.CallKind:
		c := x.AsCall()
		return c.FunctionName() == overloads.Size && (c.IsMemberFunction() && hostField(c.Target()) || len(c.Args()) == 1 && hostField(c.Args()[0]))
	}
	return false
}

func program(e *cel.Env, text string) (cel.Program, error) {
	ast, iss := e.Compile(text)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	return e.Program(ast, cel.CostLimit(MaxCost))
}

// Lacks says which of the requirement's terms (split at its top-level &&)
// a view does not meet, with what the host has where a term compares a
// field of it: "host.cpu.count >= 64 (has 48)". A host without a view
// lacks inspection.
func (r *Requirement) Lacks(v *View) []string {
	if v == nil {
		return []string{"an inspection (no hardware known)"}
	}
	var out []string
	for _, t := range r.terms {
		vars := map[string]any{"host": v}
		if got, _, err := t.prg.Eval(vars); err == nil && got.Value() == true {
			continue
		}
		said := t.text
		if t.field != nil {
			if has, _, err := t.field.Eval(vars); err == nil {
				said += fmt.Sprintf(" (has %v)", has.Value())
			}
		}
		out = append(out, said)
	}
	return out
}

// String is the expression.
func (r *Requirement) String() string { return r.expr }

// Meets reports whether a host with view v meets the requirement. A host
// without a view (not inspected) meets none; an evaluation error (a
// missing GPU's index) is not meeting it, with the error.
func (r *Requirement) Meets(v *View) (bool, error) {
	if v == nil {
		return false, nil
	}
	out, _, err := r.prg.Eval(map[string]any{"host": v})
	if err != nil {
		return false, fmt.Errorf("requirement %q: %w", r.expr, err)
	}
	ok, isBool := out.Value().(bool)
	return ok && isBool, nil
}

// MeetsProfile is Meets for a host of the profile named name that cluster
// reports (Profile of v), remembered per cluster and name. A name is a
// cluster's word: one that publishes another cluster's profile name with
// other hardware is judged on that hardware, for its own hosts only, and
// never changes the verdict on the other cluster's. An evaluation error is
// not meeting it.
func (r *Requirement) MeetsProfile(cluster, name string, v *View) bool {
	if name == "" || v == nil {
		return false
	}
	key := cluster + "/" + name // a cluster's name holds no "/"
	if ok, found := r.met.Load(key); found {
		return ok.(bool)
	}
	ok, err := r.Meets(v)
	ok = ok && err == nil
	if r.metN.Add(1) > metMax {
		r.met.Clear()
		r.metN.Store(1)
	}
	r.met.Store(key, ok)
	return ok
}

// sizes bounds what the cost estimate cannot know: the lists' lengths
// (a view holds at most their maxima) and the strings'.
type sizes struct{}

func (sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.Type() == cel.StringType {
		return &checker.SizeEstimate{Max: MaxString}
	}
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	switch path[len(path)-1] {
	case "disks":
		return &checker.SizeEstimate{Max: MaxDisks}
	case "nics":
		return &checker.SizeEstimate{Max: MaxNICs}
	case "gpus":
		return &checker.SizeEstimate{Max: MaxGPUs}
	case "firmware":
		return &checker.SizeEstimate{Max: MaxFirmware}
	}
	return nil
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Closest says what the views that do not meet r lack, for the one that
// lacks the fewest of its terms (of those, the most hardware): "the
// closest has 48 cores x86_64, ..., lacks host.cpu.count >= 64 (has 48)".
func Closest(r *Requirement, views []*View) string {
	var best []string
	var bestView *View
	for _, v := range views {
		if v == nil {
			continue
		}
		lacks := r.Lacks(v)
		if bestView == nil || len(lacks) < len(best) || len(lacks) == len(best) && Compare(v, bestView) > 0 {
			best, bestView = lacks, v
		}
	}
	if bestView == nil {
		return "their hosts are not inspected yet"
	}
	return "the closest has " + Describe(bestView) + ", lacks " + strings.Join(best, ", ")
}

// cacheMax bounds the parsed requirements Cached keeps.
const cacheMax = 1024

var cache = struct {
	sync.Mutex
	parsed map[string]cached
}{parsed: map[string]cached{}}

type cached struct {
	r   *Requirement
	err error
}

// Cached is Parse, remembered: a scheduler judges many claims that ask for
// the same few things. At most cacheMax are kept; then it starts over.
func Cached(expr string) (*Requirement, error) {
	cache.Lock()
	defer cache.Unlock()
	if c, ok := cache.parsed[expr]; ok {
		return c.r, c.err
	}
	if len(cache.parsed) >= cacheMax {
		clear(cache.parsed)
	}
	r, err := Parse(expr)
	cache.parsed[expr] = cached{r, err}
	return r, err
}
