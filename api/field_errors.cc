#include "api/field_errors.h"

#include <utility>

namespace xpu::api::checks {

void Errors::Add(FieldErrorType type, const std::string& field, std::string detail) {
  list_.push_back(FieldError{type, field, std::move(detail)});
}

void Errors::Invalid(const std::string& field, std::string detail) {
  Add(FieldErrorType::kInvalid, field, std::move(detail));
}

void Errors::Required(const std::string& field, const std::string& detail) {
  Add(FieldErrorType::kRequired, field,
      detail.empty() ? "Required value" : "Required value: " + detail);
}

void Errors::Forbidden(const std::string& field, const std::string& detail) {
  Add(FieldErrorType::kForbidden, field, "Forbidden: " + detail);
}

void Errors::TooMany(const std::string& field, size_t count, int max) {
  Add(FieldErrorType::kTooMany, field,
      "Too many: " + std::to_string(count) + ": must have at most " + std::to_string(max) +
          " items");
}

void Errors::TooLong(const std::string& field, size_t bytes, int max) {
  Add(FieldErrorType::kTooLong, field,
      "Too long: may not be more than " + std::to_string(max) + " bytes, got " +
          std::to_string(bytes));
}

void Errors::Duplicate(const std::string& field, const std::string& value) {
  Add(FieldErrorType::kDuplicate, field, "Duplicate value: \"" + value + "\"");
}

void Errors::NotSupported(const std::string& field, const std::string& value,
                          const std::vector<std::string>& supported) {
  std::string detail = "Unsupported value: \"" + value + "\": supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += ", ";
    detail += "\"" + supported[i] + "\"";
  }
  Add(FieldErrorType::kNotSupported, field, std::move(detail));
}

void Errors::RequiredValid(const std::string& value,
                           Status (*validate)(std::string_view value, std::string_view field),
                           const std::string& field) {
  if (value.empty()) {
    Required(field);
  } else {
    Check(validate(value, field), field);
  }
}

bool Errors::Check(const Status& status, const std::string& field) {
  if (status.ok()) return true;
  list_.push_back(FieldErrorFromStatus(status, field));
  // Keep the historical message form "<field>: <value> is not ...".
  list_.back().detail =
      status.message().substr(status.message().rfind(field + ": ", 0) == 0 ? field.size() + 2 : 0);
  return false;
}

std::string Key(const std::string& field, std::string_view key) {
  return field + "[\"" + std::string(key) + "\"]";
}

std::string Index(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

std::optional<Quantity> CheckQuantity(std::string_view value, const std::string& field,
                                      Errors& errs) {
  if (value.empty()) {
    errs.Required(field);
    return std::nullopt;
  }
  auto parsed = Quantity::Parse(value);
  if (!parsed.ok()) {
    errs.Invalid(field, parsed.status().message());
    return std::nullopt;
  }
  return *parsed;
}

}  // namespace xpu::api::checks
