package redfish

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// ImageSize is the size of every image ImageServer serves.
const ImageSize = 64 << 10

// ImageServer serves images for the BMCs to fetch on 127.0.0.1: any path
// ending in "live.iso" (a live ISO) or "erase.iso" (an erase image, see
// Options.Erase) is an image of ImageSize bytes; any other path is 404 (an
// image URL that does not exist). Close it when done.
func ImageServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "live.iso") && !strings.HasSuffix(r.URL.Path, "erase.iso") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(make([]byte, ImageSize))
	}))
}
