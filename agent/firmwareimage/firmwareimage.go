// Package firmwareimage verifies a firmware image against the checksum its
// FirmwareBaseline gives, before a BMC or baremetal-operator is asked to
// flash it: neither checks one, and an image server that serves another
// file would otherwise be flashed into every host the baseline restores.
package firmwareimage

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ErrMismatch: the image is not the one its checksum names.
var ErrMismatch = errors.New("the image does not match its checksum")

// Remember is how long a verified image is not fetched again: a release
// of many hosts of one make fetches it once.
const Remember = 10 * time.Minute

// Checker fetches an image and compares its digest with the baseline's.
// A nil Checker verifies nothing (--verify-firmware-images=false).
type Checker struct {
	// Client fetches images; nil is one with a 10-minute timeout.
	Client *http.Client
	// Now is the clock verified images are remembered on; nil is
	// time.Now.
	Now func() time.Time

	mu       sync.Mutex
	verified map[hostfleetv1alpha1.FirmwareImage]time.Time
}

// Verify fetches img.URL and checks its sha256 or sha512 digest against
// img.Checksum: ErrMismatch when it differs, another error when it cannot
// be fetched (worth trying again).
func (c *Checker) Verify(ctx context.Context, img hostfleetv1alpha1.FirmwareImage) error {
	if c == nil {
		return nil
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.mu.Lock()
	at, ok := c.verified[img]
	c.mu.Unlock()
	if ok && now().Sub(at) < Remember {
		return nil
	}
	algo, want, _ := strings.Cut(img.Checksum, ":")
	var h hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return fmt.Errorf("%w: checksum %q is neither sha256:<hex> nor sha512:<hex>", ErrMismatch, img.Checksum)
	}
	if err := c.fetch(ctx, img.URL, h); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %s has %s %s, the baseline says %s", ErrMismatch, img.URL, algo, got, want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verified == nil {
		c.verified = map[hostfleetv1alpha1.FirmwareImage]time.Time{}
	}
	c.verified[img] = now()
	return nil
}

func (c *Checker) fetch(ctx context.Context, url string, h hash.Hash) error {
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("fetch %s to verify it: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s to verify it: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s to verify it: %s", url, resp.Status)
	}
	if _, err := io.Copy(h, resp.Body); err != nil {
		return fmt.Errorf("fetch %s to verify it: %w", url, err)
	}
	return nil
}
