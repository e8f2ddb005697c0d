// Command stock-allocator drives upstream's structured DRA allocator
// (k8s.io/dynamic-resource-allocation/structured, the one kube-scheduler runs) in batch for the
// placement lab: one JSON request per line on stdin, one JSON answer per line on stdout, in order.
// The protocol is documented in lab/stock_allocator.h. Objects get the API server's own defaults
// (k8s.io/kubernetes/pkg/apis/resource/v1), as they would on create. Test glue only: no driver
// logic.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	resourcedefaults "k8s.io/kubernetes/pkg/apis/resource/v1"
)

const module = "k8s.io/dynamic-resource-allocation"

// The allocator features of the pinned release's defaults.
var features = structured.Features{PrioritizedList: true, DeviceTaints: true, PartitionableDevices: true}

type request struct {
	Op        string                     `json:"op"`
	Classes   []*resourceapi.DeviceClass `json:"classes"`
	Key       string                     `json:"key"`
	Slices    json.RawMessage            `json:"slices"` // the slices (op slices) or their key (op allocate)
	Node      string                     `json:"node"`
	Allocated []string                   `json:"allocated"`
	Claim     *resourceapi.ResourceClaim `json:"claim"`
}

type device struct {
	Request string `json:"request"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
}

// classLister answers like the scheduler's informer-backed lister.
type classLister struct{ classes []*resourceapi.DeviceClass }

func (l *classLister) List() ([]*resourceapi.DeviceClass, error) { return l.classes, nil }

func (l *classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range l.classes {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

type server struct {
	classes  classLister
	slices   map[string][]*keptSlice
	celCache *cel.Cache
}

// moduleVersion is the version of the allocator module linked in (the replacement's, if replaced).
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path != module {
			continue
		}
		if dep.Replace != nil && dep.Replace.Version != "" {
			return dep.Replace.Version
		}
		return dep.Version
	}
	return "unknown"
}

func (s *server) allocate(req *request) (any, error) {
	var key string
	if err := json.Unmarshal(req.Slices, &key); err != nil {
		return nil, fmt.Errorf("allocate: slices must be the key of kept slices: %w", err)
	}
	slices, ok := s.slices[key]
	if !ok {
		return nil, fmt.Errorf("allocate: no slices kept under key %q", key)
	}
	if req.Claim == nil {
		return nil, errors.New("allocate: no claim")
	}
	allocated := sets.New[structured.DeviceID]()
	for _, id := range req.Allocated {
		parts := strings.Split(id, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("allocate: allocated device %q is not driver/pool/device", id)
		}
		allocated.Insert(structured.MakeDeviceID(parts[0], parts[1], parts[2]))
	}
	state := newState(allocated)
	claim := req.Claim
	// What the API server does on create: its own defaulting (allocationMode ExactCount, count 1).
	resourcedefaults.SetObjectDefaults_ResourceClaim(claim)
	if claim.UID == "" {
		claim.UID = "replay"
	}
	ctx := context.Background()
	allocator, err := structured.NewAllocator(ctx, features, state, &s.classes, slices, s.celCache)
	if err != nil {
		return nil, fmt.Errorf("allocate: new allocator: %w", err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: req.Node}}
	results, err := allocator.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
	if errors.Is(err, structured.ErrFailedAllocationOnNode) {
		return map[string]any{"devices": nil, "reason": err.Error()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("allocate: %w", err)
	}
	if len(results) == 0 {
		return map[string]any{"devices": nil, "reason": fmt.Sprintf("claim does not fit on node %q", req.Node)}, nil
	}
	devices := []device{}
	for _, r := range results[0].Devices.Results {
		devices = append(devices, device{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device})
	}
	return map[string]any{"devices": devices}, nil
}

func (s *server) serve(line []byte) (any, error) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("bad request: %w", err)
	}
	switch req.Op {
	case "version":
		return map[string]string{"module": module, "version": moduleVersion()}, nil
	case "classes":
		s.classes.classes = req.Classes
		return map[string]bool{"ok": true}, nil
	case "forget":
		delete(s.slices, req.Key)
		return map[string]bool{"ok": true}, nil
	case "slices":
		var slices []*resourceapi.ResourceSlice
		if err := json.Unmarshal(req.Slices, &slices); err != nil {
			return nil, fmt.Errorf("slices: %w", err)
		}
		for _, slice := range slices {
			resourcedefaults.SetObjectDefaults_ResourceSlice(slice)
		}
		kept, err := keep(slices)
		if err != nil {
			return nil, fmt.Errorf("slices: %w", err)
		}
		s.slices[req.Key] = kept
		return map[string]bool{"ok": true}, nil
	case "allocate":
		return s.allocate(&req)
	default:
		return nil, fmt.Errorf("unknown op %q", req.Op)
	}
}

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: %s
Drives the stock DRA allocator (%s %s) for the placement lab:
reads one JSON request per line on stdin, writes one JSON answer per line on stdout
(protocol: lab/stock_allocator.h). Exits 0 at the end of stdin.
`, os.Args[0], module, moduleVersion())
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	// Every request leaves a whole allocator behind as garbage: collect sooner than Go's default
	// (100) so the process stays near its live set, unless GOGC says otherwise.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	s := &server{
		slices:   map[string][]*keptSlice{},
		celCache: cel.NewCache(1000, cel.Features{}),
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			answer, serr := s.serve(line)
			if serr != nil {
				answer = map[string]string{"error": serr.Error()}
			}
			data, merr := json.Marshal(answer)
			if merr != nil {
				data, _ = json.Marshal(map[string]string{"error": "encode answer: " + merr.Error()})
			}
			out.Write(append(data, '\n'))
			if ferr := out.Flush(); ferr != nil {
				fmt.Fprintln(os.Stderr, "stock-allocator: write:", ferr)
				os.Exit(1)
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "stock-allocator: read:", err)
			os.Exit(1)
		}
	}
}
