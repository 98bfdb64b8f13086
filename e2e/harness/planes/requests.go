package planes

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Requests is how many requests of verb (PUT, APPLY, ...) on resource the
// API server at cfg has served since it started (apiserver_request_total):
// a test compares two readings to count the writes between them.
func Requests(ctx context.Context, cfg *rest.Config, verb, resource string) (float64, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	data, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the API server's metrics: %w", err)
	}
	var n float64
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="`+verb+`"`) ||
			!strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		n += v
	}
	return n, nil
}
