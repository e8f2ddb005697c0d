// The CDI injection step of scripts/device/gpu-e2e.sh, where no containerd runs: the container
// device interface's own Go library (tags.cncf.io/container-device-interface, the one containerd
// vendors) applies the plugin's CDI specs to an OCI bundle's config.json, as a runtime does. Build
// glue only: the library decides every edit.
module xpu.dra.dev/e2e/upstream/runtime/cdi-apply

go 1.26.0

require (
	github.com/opencontainers/runtime-spec v1.3.0
	tags.cncf.io/container-device-interface v1.1.1
)

require (
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.19.0 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
