// Command etcd is upstream etcd's own server entry point, built at the version the pinned
// Kubernetes release requires, so the local control plane needs no prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
