// Command podtest is the program the pod runner's tests run as a pod, from
// an image: it answers questions about what it sees from inside.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat("/unhealthy"); err == nil {
			http.Error(w, "unhealthy", http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		if err := os.WriteFile(path, []byte(r.URL.Query().Get("data")), 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
	})
	mux.HandleFunc("/id", func(w http.ResponseWriter, _ *http.Request) {
		wd, _ := os.Getwd()
		fmt.Fprintf(w, "%d:%d %s", os.Getuid(), os.Getgid(), wd)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat("/config/not-ready"); err == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, os.Getenv(r.URL.Query().Get("name")))
	})
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		// In-cluster config: KUBERNETES_SERVICE_HOST/PORT, token and ca.crt.
		cfg, err := rest.InClusterConfig()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := c.Post(cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	})
	mux.HandleFunc("/exit", func(http.ResponseWriter, *http.Request) { os.Exit(3) })
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Println("serving on :8080")
	if err := srv.ListenAndServe(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
