package planes

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Metrics reads the metrics of the API server at cfg, parsed (expfmt):
// its metric families by name.
func Metrics(ctx context.Context, cfg *rest.Config) (map[string]*dto.MetricFamily, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	data, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	return families, nil
}

// Sample is one metric of a family: its labels, and its value (a counter's,
// a gauge's or an untyped one's; for a histogram, its count, and Over1s
// the observations over one second).
type Sample struct {
	Labels map[string]string
	Value  float64
	Over1s float64
	// Sum is a histogram's sum.
	Sum float64
}

// Samples are the metrics of the family name (none if the server has none).
func Samples(families map[string]*dto.MetricFamily, name string) []Sample {
	f := families[name]
	if f == nil {
		return nil
	}
	out := make([]Sample, 0, len(f.GetMetric()))
	for _, m := range f.GetMetric() {
		s := Sample{Labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.Labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			s.Value = m.GetCounter().GetValue()
		case m.Gauge != nil:
			s.Value = m.GetGauge().GetValue()
		case m.Untyped != nil:
			s.Value = m.GetUntyped().GetValue()
		case m.Histogram != nil:
			h := m.GetHistogram()
			s.Value, s.Sum, s.Over1s = float64(h.GetSampleCount()), h.GetSampleSum(), float64(h.GetSampleCount())
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == 1 {
					s.Over1s -= float64(b.GetCumulativeCount())
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// Requests is how many requests of verb (PUT, APPLY, ...) on resource the
// API server at cfg has served since it started (apiserver_request_total):
// a test compares two readings to count the writes between them.
func Requests(ctx context.Context, cfg *rest.Config, verb, resource string) (float64, error) {
	families, err := Metrics(ctx, cfg)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, s := range Samples(families, "apiserver_request_total") {
		if s.Labels["verb"] == verb && s.Labels["resource"] == resource {
			n += s.Value
		}
	}
	return n, nil
}
