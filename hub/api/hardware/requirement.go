package hardware

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
)

// Limits of a requirement: its length, and its cost as CEL estimates it
// over a view at its largest (MaxDisks, MaxNICs, MaxGPUs, MaxString), the
// same measure ValidatingAdmissionPolicy uses. One exists() over the disks
// costs about 650; an exists() over the NICs within one over the disks
// about 37 000, and is refused.
const (
	MaxLength = 2048
	MaxCost   = 10000
	// MaxString is the longest string the estimate assumes (a model).
	MaxString = 256
)

// Requirement is a claim's requirement on a host's hardware: a CEL
// expression over the variable host (a View) that yields a bool, such as
//
//	host.cpu.count >= 64 && host.disks.exists(d, d.type == "NVME" && d.sizeGiB >= 1000)
type Requirement struct {
	expr string
	prg  cel.Program
}

// celEnv is the one CEL environment of requirements: host, a View.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[View](), ext.ParseStructTag("json")),
		cel.Variable("host", cel.ObjectType("hardware.View")),
		ext.Strings(),
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
	return &Requirement{expr: expr, prg: prg}, nil
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
	}
	return nil
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
