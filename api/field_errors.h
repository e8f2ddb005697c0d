// Private to xpu::api's object validators (resource_validation.h): the collector of an object's
// FieldErrors with the API server's message forms ("Required value", "Too many: 3: must have at
// most 2 items", ...), and the field paths they name: spec.devices[3].attributes["a/b"].
#ifndef XPU_API_FIELD_ERRORS_H_
#define XPU_API_FIELD_ERRORS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/quantity.h"
#include "api/validation.h"
#include "base/status.h"

namespace xpu::api::checks {

// Collects the problems of one object in check order.
class Errors {
 public:
  void Add(FieldErrorType type, const std::string& field, std::string detail);
  // FieldValueInvalid with `detail` as given (it carries its own "Invalid value: ..." form).
  void Invalid(const std::string& field, std::string detail);
  // "Required value", or "Required value: <detail>".
  void Required(const std::string& field, const std::string& detail = "");
  // "Forbidden: <detail>".
  void Forbidden(const std::string& field, const std::string& detail);
  // "Too many: <count>: must have at most <max> items".
  void TooMany(const std::string& field, size_t count, int max);
  // "Too long: may not be more than <max> bytes, got <bytes>".
  void TooLong(const std::string& field, size_t bytes, int max);
  // "Duplicate value: \"<value>\"".
  void Duplicate(const std::string& field, const std::string& value);
  // "Unsupported value: \"<value>\": supported values: \"a\", \"b\"".
  void NotSupported(const std::string& field, const std::string& value,
                    const std::vector<std::string>& supported);
  // Records Too many when `items` has more than `max`; whether the items are to be checked.
  template <typename Items>
  bool WithinLimit(const Items& items, int max, const std::string& field) {
    if (items.size() <= static_cast<size_t>(max)) return true;
    TooMany(field, items.size(), max);
    return false;
  }
  // Records a missing `value` as required, else what `validate(value, field)` finds.
  void RequiredValid(const std::string& value,
                     Status (*validate)(std::string_view value, std::string_view field),
                     const std::string& field);
  // Records a non-OK Status of a validation.h check made with `field`; returns status.ok().
  bool Check(const Status& status, const std::string& field);
  bool empty() const { return list_.empty(); }
  // The problems recorded so far, in check order; the collector is left empty.
  FieldErrors Take() { return std::move(list_); }

 private:
  FieldErrors list_;
};

// `field` + `["key"]`: Key("metadata.labels", "app") is metadata.labels["app"].
std::string Key(const std::string& field, std::string_view key);
// `field` + `[i]`: Index("spec.devices", 3) is spec.devices[3].
std::string Index(const std::string& field, size_t i);
// Whether `count` is above the limit `max`.
inline bool Over(size_t count, int max) { return count > static_cast<size_t>(max); }

// The quantity `value` ("4Gi") of `field`; nullopt, with Required or Invalid recorded, when it is
// empty or does not parse.
std::optional<Quantity> CheckQuantity(std::string_view value, const std::string& field,
                                      Errors& errs);

}  // namespace xpu::api::checks

#endif  // XPU_API_FIELD_ERRORS_H_
