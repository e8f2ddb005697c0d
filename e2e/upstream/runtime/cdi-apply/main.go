// Command cdi-apply injects CDI devices into an OCI runtime spec with the upstream CDI library:
//
//	cdi-apply -spec-dir DIR -config BUNDLE/config.json KIND=NAME...
//
// It refreshes the registry from DIR, injects the named devices (device nodes, mounts, hooks,
// environment, as a runtime would) and writes config.json back.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

func main() {
	specDir := flag.String("spec-dir", "/var/run/cdi", "the CDI spec folder")
	config := flag.String("config", "config.json", "the OCI bundle's config.json")
	flag.Parse()
	if err := run(*specDir, *config, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "cdi-apply:", err)
		os.Exit(1)
	}
}

func run(specDir, config string, devices []string) error {
	raw, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	var spec specs.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(specDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return err
	}
	if unresolved, err := cache.InjectDevices(&spec, devices...); err != nil {
		return fmt.Errorf("inject %v (unresolved %v): %w", devices, unresolved, err)
	}
	out, err := json.MarshalIndent(&spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(config, out, 0o644)
}
