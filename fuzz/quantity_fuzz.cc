// Kubernetes quantities (api/quantity.h) as resource objects, inventories and the controller
// config spell them. The input is one or two quantities separated by a space ("1Gi 1024Mi").
//
// Invariants: String() parses back to an equal value, and that quantity's String() is a fixed
// point (not always the same text: as in Kubernetes, "62.5Ki" is written "64000", a binary value
// with no whole power of 1024, which reads back as decimal and is written "64k"); the JSON forms
// round-trip; comparison is antisymmetric; a byte count ParseQuantityBytes accepts is the integer
// Quantity::Parse reads, and FormatQuantityBytes spells it back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/quantity.h"
#include "fuzz/fuzz_util.h"

namespace {

using ::xpu::api::Quantity;

void CheckQuantity(const Quantity& q) {
  const std::string text = q.String();
  xpu::StatusOr<Quantity> again = Quantity::Parse(text);
  FUZZ_CHECK(again.ok(), text);
  FUZZ_CHECK(*again == q, text);
  const std::string canonical = again->String();
  xpu::StatusOr<Quantity> third = Quantity::Parse(canonical);
  FUZZ_CHECK(third.ok() && *third == q && third->String() == canonical, text);
  if (again->String() != text) {
    // Only a binary quantity written without a suffix changes format on reading.
    FUZZ_CHECK(q.format() == Quantity::Format::kBinarySI && text.find('i') == std::string::npos,
               text);
  }
  FUZZ_CHECK(q.Cmp(q) == 0, text);
  xpu::StatusOr<Quantity> from_json = xpu::api::QuantityFromJson(xpu::api::QuantityToJson(q));
  FUZZ_CHECK(from_json.ok() && *from_json == q && from_json->String() == canonical, text);
  if (std::optional<int64_t> value = q.AsInt64()) {
    FUZZ_CHECK(*value == q.Value(), text);
    if (*value != INT64_MIN) FUZZ_CHECK(Quantity::FromInt64(*value) == q, text);
  }
  (void)q.MilliValue();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = xpu::fuzz::AsText(data, size);
  const std::vector<std::string_view> parts = xpu::fuzz::Split(input, " ", 2);
  xpu::StatusOr<Quantity> first = Quantity::Parse(parts[0]);
  if (first.ok()) CheckQuantity(*first);
  if (parts.size() == 2) {
    xpu::StatusOr<Quantity> second = Quantity::Parse(parts[1]);
    if (second.ok()) CheckQuantity(*second);
    if (first.ok() && second.ok()) {
      FUZZ_CHECK(first->Cmp(*second) == -second->Cmp(*first), std::string(input));
    }
  }

  xpu::StatusOr<int64_t> bytes = xpu::api::ParseQuantityBytes(parts[0]);
  if (bytes.ok()) {
    FUZZ_CHECK(first.ok() && first->AsInt64() == *bytes, std::string(parts[0]));
    const std::string spelled = xpu::api::FormatQuantityBytes(*bytes);
    xpu::StatusOr<int64_t> again = xpu::api::ParseQuantityBytes(spelled);
    FUZZ_CHECK(again.ok() && *again == *bytes, spelled);
  }
  if (std::optional<nlohmann::json> doc = xpu::fuzz::ParseJson(input)) {
    xpu::StatusOr<Quantity> from_json = xpu::api::QuantityFromJson(*doc);
    if (from_json.ok()) CheckQuantity(*from_json);
  }
  return 0;
}
