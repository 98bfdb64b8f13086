package baseline

import (
	"encoding/json"
	"strings"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Standing is how a host stands against the baselines that select it, as
// last read, for the inventory to count without reading any BMC: a host
// being restored is drifted or behind as its findings said; another is
// judged from what its BMC read when it was last inspected or freed
// (hostfleet.io/baseline-observed), else from its hardware view's
// firmware, with what neither holds unknown. A held host is counted as
// held, not here: ok is false for it, and for a host no baseline selects.
func Standing(baselines []hostfleetv1alpha1.FirmwareBaseline, view *hardware.View, annotations map[string]string) (State, bool) {
	v, restoring := annotations[hostfleetv1alpha1.AnnotationRestore]
	p := ProgressOf(v, restoring)
	if p.Phase == PhaseHeld {
		return "", false
	}
	w, err := Merge(baselines, view)
	switch {
	case err != nil:
		return Unknown, true
	case len(w.From) == 0:
		return "", false
	case restoring && p.Phase != PhaseJudge:
		for _, f := range p.Found {
			if strings.Contains(f, " "+strings.ToLower(string(Drifted))+":") {
				return Drifted, true
			}
		}
		return Behind, true
	}
	var have Observed
	if json.Unmarshal([]byte(annotations[hostfleetv1alpha1.AnnotationBaselineObserved]), &have) != nil && view != nil {
		have = Observed{Firmware: view.Firmware}
	}
	return Judge(w, have, nil).State, true
}
