// Package iptables is a build stand-in for sigs.k8s.io/iptables-wrappers/pkg/iptables, which the
// Go module proxy refuses to serve. It declares only what the 1.38 kubelet compiles against
// (pkg/kubelet/kubelet_network_linux.go) and answers as a host without iptables does:
// NewBestEffort finds no iptables, so the kubelet logs "No iptables support on this system" and
// creates no KUBE-IPTABLES-HINT or KUBE-FIREWALL chain, the path upstream's kubelet takes on a
// host with nftables only. Nothing of the kubelet's DRA, CRI or registration code goes through
// this package. Written for this project from the kubelet's call sites; no code of the real
// module is here.
package iptables

import (
	"context"
	"time"
)

// Chain names an iptables chain.
type Chain string

// Table names an iptables table.
type Table string

// RulePosition says where EnsureRule puts a rule that is missing.
type RulePosition string

// Protocol is the IP family of a client.
type Protocol string

// Mode says which iptables binaries NewBestEffort may use.
type Mode int

// The tables, chains, positions and modes the kubelet names.
const (
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"
	TableFilter Table = "filter"

	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"
)

// UseInstalledMode uses whichever iptables binaries the host has.
const UseInstalledMode Mode = 0

// Interface is the part of an iptables client that the kubelet calls.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns a client per IP family whose iptables works: none here, as on a host
// without iptables. The map is keyed by family, as the kubelet ranges over it.
func NewBestEffort(_ context.Context, _ Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
