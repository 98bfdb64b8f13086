package planes

import (
	"context"
	"fmt"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Events are the Events recorded about obj (matched by UID), as
// "Type/Reason: note", oldest first as the API server lists them.
func Events(ctx context.Context, c client.Reader, obj client.Object) ([]string, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == obj.GetUID() {
			out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
		}
	}
	return out, nil
}
