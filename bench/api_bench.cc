// Decode and encode speed of ResourceSlices: the list a controller or scheduler-side tool reads
// for a 5,000-node cluster (40,000 devices, 8 per slice), from JSON text to typed objects.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/resource.h"
#include "bench/api_objects.h"

namespace {

using nlohmann::json;

std::string SliceListText(int slices, int devices_per_slice) {
  json list = {{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceSliceList"},
               {"metadata", {{"resourceVersion", "1"}}},
               {"items", json::array()}};
  for (int i = 0; i < slices; ++i) {
    list["items"].push_back(
        xpu::bench::ExampleSlice("node-" + std::to_string(i), devices_per_slice));
  }
  return list.dump();
}

// Parse the list text and decode every item into the typed v1 ResourceSlice.
void BM_DecodeSliceList(benchmark::State& state) {
  const int slices = static_cast<int>(state.range(0));
  const std::string text = SliceListText(slices, 8);
  for (auto _ : state) {
    const json list = json::parse(text);
    size_t devices = 0;
    for (const json& item : list["items"]) {
      auto slice = xpu::api::FromJson<xpu::api::resource::ResourceSlice>(item);
      if (!slice.ok()) state.SkipWithError(slice.status().message().c_str());
      devices += slice->spec.devices.size();
    }
    benchmark::DoNotOptimize(devices);
  }
  state.SetItemsProcessed(state.iterations() * slices * 8);  // devices
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["list_MiB"] = static_cast<double>(text.size()) / (1 << 20);
}
BENCHMARK(BM_DecodeSliceList)->Arg(5000)->Unit(benchmark::kMillisecond);

// Encode typed slices back to JSON text (what a publisher sends).
void BM_EncodeSlices(benchmark::State& state) {
  const int slices = static_cast<int>(state.range(0));
  std::vector<xpu::api::resource::ResourceSlice> typed;
  for (int i = 0; i < slices; ++i) {
    typed.push_back(*xpu::api::FromJson<xpu::api::resource::ResourceSlice>(
        xpu::bench::ExampleSlice("node-" + std::to_string(i), 8)));
  }
  for (auto _ : state) {
    size_t bytes = 0;
    for (const auto& s : typed) bytes += xpu::api::resource::ToJson(s).dump().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * slices * 8);
}
BENCHMARK(BM_EncodeSlices)->Arg(5000)->Unit(benchmark::kMillisecond);

// v1 -> v1beta1 -> v1 conversion of one slice (clusters serving only the beta).
void BM_ConvertSliceV1beta1(benchmark::State& state) {
  const json slice = xpu::bench::ExampleSlice("node-0", 8);
  for (auto _ : state) {
    auto beta =
        xpu::api::resource::ConvertResource(slice, xpu::api::resource::ResourceVersion::kV1beta1);
    auto back =
        xpu::api::resource::ConvertResource(*beta, xpu::api::resource::ResourceVersion::kV1);
    benchmark::DoNotOptimize(back);
  }
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK(BM_ConvertSliceV1beta1);

}  // namespace

BENCHMARK_MAIN();
