// Command fake-cri serves upstream's fake CRI runtime (k8s.io/cri-client/pkg/fake) on a unix
// socket, so a real kubelet can run pods without containers. It also appends what reaches
// CreateContainer (pod, container, CDI device ids) as JSON lines to --record, which is how the
// tests see the CDI ids the kubelet's DRA manager passed on. Test glue only: no driver logic.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	kubeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
	"k8s.io/cri-client/pkg/util"
)

type recordingRuntime struct {
	*fake.RemoteRuntime
	mu     sync.Mutex
	record *os.File
}

type created struct {
	Pod        string   `json:"pod"`
	Namespace  string   `json:"namespace"`
	Container  string   `json:"container"`
	CDIDevices []string `json:"cdiDevices"`
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, req *kubeapi.CreateContainerRequest) (*kubeapi.CreateContainerResponse, error) {
	entry := created{Container: req.GetConfig().GetMetadata().GetName()}
	if md := req.GetSandboxConfig().GetMetadata(); md != nil {
		entry.Pod, entry.Namespace = md.GetName(), md.GetNamespace()
	}
	for _, d := range req.GetConfig().GetCDIDevices() {
		entry.CDIDevices = append(entry.CDIDevices, d.GetName())
	}
	line, _ := json.Marshal(entry)
	r.mu.Lock()
	_, err := r.record.Write(append(line, '\n'))
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("record CreateContainer: %w", err)
	}
	return r.RemoteRuntime.CreateContainer(ctx, req)
}

func main() {
	endpoint := flag.String("endpoint", "", "unix socket to serve, e.g. unix:///run/fake-cri.sock")
	record := flag.String("record", "", "file that receives one JSON line per CreateContainer")
	flag.Parse()
	if *endpoint == "" || *record == "" {
		fmt.Fprintln(os.Stderr, "usage: fake-cri --endpoint unix:///PATH.sock --record FILE")
		os.Exit(2)
	}
	f, err := os.OpenFile(*record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-cri:", err)
		os.Exit(1)
	}
	runtime := &recordingRuntime{RemoteRuntime: fake.NewFakeRemoteRuntime(), record: f}
	runtime.RuntimeService.FakeStatus = &kubeapi.RuntimeStatus{Conditions: []*kubeapi.RuntimeCondition{
		{Type: kubeapi.RuntimeReady, Status: true}, {Type: kubeapi.NetworkReady, Status: true}}}
	server := grpc.NewServer()
	kubeapi.RegisterRuntimeServiceServer(server, runtime)
	kubeapi.RegisterImageServiceServer(server, runtime)
	l, err := util.CreateListener(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-cri: listen:", err)
		os.Exit(1)
	}
	go func() { _ = server.Serve(l) }()
	fmt.Println("fake-cri: serving on", *endpoint)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.Stop()
}
