//go:build !draapi

// Up to 1.37 the allocator reads resource.k8s.io/v1 slices as they are; build-upstream builds
// this file for those pins (without the draapi tag).
package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// keptSlice is the slice type structured.NewAllocator takes.
type keptSlice = resourceapi.ResourceSlice

func keep(in []*resourceapi.ResourceSlice) ([]*keptSlice, error) { return in, nil }

func newState(allocated sets.Set[structured.DeviceID]) structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         allocated,
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
}
