package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// ImageSize is the size of every image ImageServer serves.
const ImageSize = 64 << 10

// ImageServer serves images for the BMCs to fetch on 127.0.0.1: any path
// ending in "live.iso" (a live ISO) or "erase.iso" (an erase image, see
// Options.Erase) is an image of ImageSize bytes; any other path is 404 (an
// image URL that does not exist). Close it when done.
func ImageServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/firmware/"); ok {
			// <component>-<version>: firmware of that version.
			if i := strings.LastIndex(name, "-"); i > 0 {
				_, _ = w.Write(FirmwareImage(name[i+1:]))
				return
			}
		}
		if !strings.HasSuffix(r.URL.Path, "live.iso") && !strings.HasSuffix(r.URL.Path, "erase.iso") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(make([]byte, ImageSize))
	}))
}

// insertMedia fetches the image, as a BMC does, and fails as one does
// when it cannot.
func (b *BMC) insertMedia(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Image          string
		Inserted       *bool
		WriteProtected *bool
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Image == "" {
		writeError(w, http.StatusBadRequest, "InsertMedia needs an Image URL")
		return
	}
	// Fetch without holding the lock: images are slow.
	b.mu.Unlock()
	size, err := fetch(r.Context(), in.Image)
	b.mu.Lock()
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("cannot fetch image %s: %v", in.Image, err))
		return
	}
	b.media = media{Inserted: true, Image: in.Image, Size: size}
	b.record("InsertMedia %s", in.Image)
	w.WriteHeader(http.StatusNoContent)
}

func fetch(ctx context.Context, url string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return io.Copy(io.Discard, resp.Body)
}
