// The resource.k8s.io objects (api/resource.h): ResourceSlice, DeviceClass, ResourceClaim,
// ResourceClaimTemplate and their lists, in any served version (converted to v1 first), then the
// API server's validation rules at each release. The input is the object's JSON; its kind picks
// the codec.
//
// Invariants: decode -> encode -> decode is stable (fuzz/round_trip.h); v1 -> v1beta2 -> v1 is
// the identity; for a valid object v1 -> v1beta1 -> v1 decodes and is stable after one round (the
// first round may move unknown members of a request into `exactly`); an object that validates
// also validates as an update to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/resource.h"
#include "api/resource_validation.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/round_trip.h"

namespace {

namespace api = ::xpu::api;
namespace resource = ::xpu::api::resource;
using ::nlohmann::json;
using ::xpu::fuzz::Dump;

constexpr api::KubeVersion kReleases[] = {api::KubeVersion::k1_34, api::KubeVersion::k1_35};

// `object` (v1) converted to `version` and back to v1; both conversions must succeed.
json ThroughVersion(const json& object, resource::ResourceVersion version) {
  xpu::StatusOr<json> there = resource::ConvertResource(object, version);
  FUZZ_CHECK(there.ok(), there.status().ToString() + "\n" + Dump(object));
  xpu::StatusOr<json> back = resource::ConvertResource(*there, resource::ResourceVersion::kV1);
  FUZZ_CHECK(back.ok(), back.status().ToString() + "\n" + Dump(*there));
  return *std::move(back);
}

// v1beta2 has the v1 layout: always the identity. v1beta1 only for objects the API server would
// store: a request with neither `exactly` nor `firstAvailable` (invalid) comes back with an
// `exactly` holding its unknown members, which does not decode.
template <typename T>
void CheckConversions(const T& value, bool valid) {
  const json v1 = ToJson(value);
  FUZZ_CHECK(ThroughVersion(v1, resource::ResourceVersion::kV1beta2) == v1, Dump(v1));
  const json once = ThroughVersion(v1, resource::ResourceVersion::kV1beta1);
  if (!valid) return;
  const xpu::StatusOr<T> decoded = api::FromJson<T>(once);
  FUZZ_CHECK(decoded.ok(), decoded.status().ToString() + "\n" + Dump(once));
  FUZZ_CHECK(ThroughVersion(once, resource::ResourceVersion::kV1beta1) == once, Dump(once));
}

// Whether a value with `errors` is valid; a valid one must also be a valid update of itself.
template <typename T>
bool ValidAsUpdate(const api::FieldErrors& errors, const api::FieldErrors& self_update_errors,
                   const T& value) {
  if (!errors.empty()) return false;
  FUZZ_CHECK(self_update_errors.empty(),
             api::JoinFieldErrors(self_update_errors) + "\n" + Dump(ToJson(value)));
  return true;
}

// Decodes, round-trips and converts a T. `validate(value, release)` says whether the value is
// valid at `release`, checking what follows from that.
template <typename T, typename Validate>
void Exercise(const json& doc, bool is_list, Validate validate) {
  if (is_list) {
    xpu::StatusOr<api::List<T>> list = api::ListFromJson<T>(doc);
    if (!list.ok()) return;
    const json encoded = ToJson(*list);
    xpu::StatusOr<api::List<T>> again = api::ListFromJson<T>(encoded);
    FUZZ_CHECK(again.ok() && again->items == list->items, Dump(encoded));
    for (const T& item : list->items) {
      for (api::KubeVersion release : kReleases) (void)validate(item, release);
    }
    return;
  }
  std::optional<T> value = xpu::fuzz::DecodeAndRoundTrip<T>(doc);
  if (!value) return;
  bool valid = false;  // at some release
  for (api::KubeVersion release : kReleases) valid = validate(*value, release) || valid;
  CheckConversions(*value, valid);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<json> doc = xpu::fuzz::ParseJson(xpu::fuzz::AsText(data, size));
  if (!doc) return 0;
  std::string kind = xpu::fuzz::StringMember(*doc, "kind");
  const bool is_list = kind.ends_with("List");
  if (is_list) kind.resize(kind.size() - 4);

  const std::string api_version = xpu::fuzz::StringMember(*doc, "apiVersion");
  if (!api_version.empty() && api_version != resource::kApiVersionV1) {
    xpu::StatusOr<json> v1 = resource::ConvertResource(*doc, resource::ResourceVersion::kV1);
    if (!v1.ok()) return 0;
    *doc = *std::move(v1);
  }

  if (kind == "ResourceSlice") {
    Exercise<resource::ResourceSlice>(*doc, is_list, [](const auto& slice, auto release) {
      return ValidAsUpdate(api::ResourceSliceErrors(slice, release),
                           api::ResourceSliceUpdateErrors(slice, slice, release), slice);
    });
  } else if (kind == "DeviceClass") {
    Exercise<resource::DeviceClass>(*doc, is_list, [](const auto& device_class, auto release) {
      return api::DeviceClassErrors(device_class, release).empty();
    });
  } else if (kind == "ResourceClaim") {
    Exercise<resource::ResourceClaim>(*doc, is_list, [](const auto& claim, auto release) {
      (void)api::ResourceClaimStatusUpdateErrors(claim, claim, release);
      return ValidAsUpdate(api::ResourceClaimErrors(claim, release),
                           api::ResourceClaimUpdateErrors(claim, claim, release), claim);
    });
  } else if (kind == "ResourceClaimTemplate") {
    Exercise<resource::ResourceClaimTemplate>(*doc, is_list, [](const auto& tmpl, auto release) {
      return ValidAsUpdate(api::ResourceClaimTemplateErrors(tmpl, release),
                           api::ResourceClaimTemplateUpdateErrors(tmpl, tmpl, release), tmpl);
    });
  }
  return 0;
}
