// Pins the one CNI plugin the upstream-runtime tests' containerd needs: loopback, from
// github.com/containernetworking/plugins at a release. The test nodes' pods have only a loopback
// interface in their network namespace (docs/testing.md, "The runtime tier"): nothing on the
// host's network changes.
module xpu.dra.dev/e2e/upstream/runtime/cni

go 1.26.8

tool github.com/containernetworking/plugins/plugins/main/loopback

require (
	github.com/containernetworking/cni v1.3.1 // indirect
	github.com/containernetworking/plugins v1.10.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
