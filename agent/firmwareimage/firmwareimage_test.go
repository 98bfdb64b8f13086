package firmwareimage_test

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestVerify: an image is flashed only when its digest is the baseline's
// (sha256 or sha512); one that differs is a mismatch, one that cannot be
// fetched another error; a verified image is not fetched again for a
// while; a nil Checker verifies nothing.
func TestVerify(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	body := []byte("firmware 1.2.3")
	var fetches atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if r.URL.Path != "/bios.bin" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	defer s.Close()
	s256, s512 := sha256.Sum256(body), sha512.Sum512(body)
	now := time.Now()
	c := &firmwareimage.Checker{Now: func() time.Time { return now }}
	img := func(url, sum string) hostfleetv1alpha1.FirmwareImage {
		return hostfleetv1alpha1.FirmwareImage{Version: "1.2.3", URL: s.URL + url, Checksum: sum}
	}
	good := img("/bios.bin", "sha256:"+hex.EncodeToString(s256[:]))

	g.Expect(c.Verify(ctx, good)).To(Succeed())
	g.Expect(c.Verify(ctx, img("/bios.bin", "sha512:"+hex.EncodeToString(s512[:])))).To(Succeed())
	err := c.Verify(ctx, img("/bios.bin", "sha256:"+hex.EncodeToString(make([]byte, 32))))
	g.Expect(err).To(MatchError(firmwareimage.ErrMismatch))
	g.Expect(err).To(MatchError(ContainSubstring("has sha256 " + hex.EncodeToString(s256[:]))))
	err = c.Verify(ctx, img("/gone.bin", good.Checksum))
	g.Expect(err).To(MatchError(ContainSubstring("404 Not Found")))
	g.Expect(err).NotTo(MatchError(firmwareimage.ErrMismatch), "worth trying again")

	fetched := fetches.Load()
	g.Expect(c.Verify(ctx, good)).To(Succeed())
	g.Expect(fetches.Load()).To(Equal(fetched), "verified a moment ago")
	now = now.Add(firmwareimage.Remember)
	g.Expect(c.Verify(ctx, good)).To(Succeed())
	g.Expect(fetches.Load()).To(Equal(fetched+1), "fetched again once it is no longer remembered")

	var none *firmwareimage.Checker
	g.Expect(none.Verify(ctx, img("/gone.bin", "sha256:0"))).To(Succeed())
}
