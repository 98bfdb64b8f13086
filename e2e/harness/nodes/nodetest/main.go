// Command nodetest is the program of the nodes' own test
// (e2e/harness/nodes): as an init container it writes a file into a shared
// volume; as the main container it lists its namespace's pods through the
// kubernetes Service with its ServiceAccount token (kube-proxy's rules and
// the projected token at work), says so, and serves /healthz while the
// init container's file is there; as an exec probe it checks that file.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	mode := flag.String("mode", "serve", "init, serve or probe")
	file := flag.String("file", "/shared/ready", "the file the init container writes")
	flag.Parse()
	if err := run(*mode, *file); err != nil {
		fmt.Fprintln(os.Stderr, "nodetest:", err)
		os.Exit(1)
	}
}

func run(mode, file string) error {
	switch mode {
	case "init":
		return os.WriteFile(file, []byte("written by the init container\n"), 0o644)
	case "probe":
		_, err := os.Stat(file)
		return err
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(string(ns)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods through %s: %w", cfg.Host, err)
	}
	fmt.Printf("listed %d pods of %s through %s\n", len(pods.Items), ns, cfg.Host)
	if err := os.WriteFile("/tmp/probe", nil, 0o644); err == nil {
		return fmt.Errorf("the root filesystem is writable")
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(file); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return http.ListenAndServe(":8080", nil)
}
