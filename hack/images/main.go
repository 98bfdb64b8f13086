package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	b := Build{Root: ".", Log: os.Stderr}
	arches := flag.String("arch", "amd64,arm64", "linux architectures of each image index")
	flag.StringVar(&b.Out, "out", "bin/images", "where the OCI layouts and tarballs go")
	flag.StringVar(&b.Version, "version", git("describe", "--tags", "--always", "--dirty"), "version stamped into binaries and labels")
	flag.StringVar(&b.Revision, "revision", git("rev-parse", "HEAD"), "source revision label")
	flag.StringVar(&b.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle the images carry")
	flag.Parse()
	b.Arches = strings.Split(*arches, ",")
	results, err := b.Run(Images)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, r := range results {
		fmt.Printf("%s:%s  index %s\n", Registry+"/"+r.Image.Name, b.Version, r.Index)
		for _, arch := range b.Arches {
			fmt.Printf("  linux/%-6s %s  %.1f MiB\n", arch, r.Arches[arch], float64(r.Size[arch])/(1<<20))
		}
	}
}

// git is the output of a git command, or "dev" when there is none.
func git(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "dev"
	}
	return strings.TrimSpace(string(out))
}
