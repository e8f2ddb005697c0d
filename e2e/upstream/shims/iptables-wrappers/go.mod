// A build stand-in for sigs.k8s.io/iptables-wrappers, used only by the 1.38.0-beta.0 pins
// (e2e/upstream/versions/1.38.0-beta.0.mod replaces the module with this folder): the Go module
// proxy refuses that module's source (403 since 2026-12-05), and the 1.38 kubelet imports it for
// its iptables canary chains alone. See pkg/iptables/iptables.go and docs/reference/kubernetes-1.38.md.
module sigs.k8s.io/iptables-wrappers

go 1.24
