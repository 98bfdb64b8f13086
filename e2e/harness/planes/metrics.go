package planes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Metrics reads the metrics of the API server at cfg and calls each with
// every line.
func Metrics(ctx context.Context, cfg *rest.Config, each func(line string)) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	data, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("API server metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
	return sc.Err()
}

// Requests is how many requests of verb (PUT, APPLY, ...) on resource the
// API server at cfg has served since it started (apiserver_request_total):
// a test compares two readings to count the writes between them.
func Requests(ctx context.Context, cfg *rest.Config, verb, resource string) (float64, error) {
	var n float64
	var bad error
	err := Metrics(ctx, cfg, func(line string) {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="`+verb+`"`) ||
			!strings.Contains(line, `resource="`+resource+`"`) {
			return
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			bad = fmt.Errorf("metric line %q: %w", line, err)
		}
		n += v
	})
	if err == nil {
		err = bad
	}
	return n, err
}
