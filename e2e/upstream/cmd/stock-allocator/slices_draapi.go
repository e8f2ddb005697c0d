//go:build draapi

// From 1.38 the allocator reads slices in the module's own form (k8s.io/dynamic-resource-allocation/api),
// which kube-scheduler converts them to from its informer; build-upstream builds this file for
// those pins (with the draapi tag). The conversion is the module's generated one.
package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
)

// keptSlice is the slice type structured.NewAllocator takes.
type keptSlice = draapi.ResourceSlice

func keep(in []*resourceapi.ResourceSlice) ([]*keptSlice, error) {
	out := make([]*keptSlice, 0, len(in))
	for _, s := range in {
		var c draapi.ResourceSlice
		if err := draapi.Convert_v1_ResourceSlice_To_api_ResourceSlice(s, &c, nil); err != nil {
			return nil, err
		}
		out = append(out, &c)
	}
	return out, nil
}

func newState(allocated sets.Set[structured.DeviceID]) structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         allocated,
		AllocatedSharedDeviceIDs: sets.New[structured.DeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
}
