#include "api/validation.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/enum_names.h"
#include "base/text.h"

namespace xpu::api {
namespace {

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLowerAlnum(char c) { return IsLower(c) || IsAsciiDigit(c); }
bool IsAlnum(char c) { return IsLower(c) || IsUpper(c) || IsAsciiDigit(c); }
bool IsHex(char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'f'); }

// Whether `v` is not empty and each of its characters is of the `kind` or one of `extra`.
bool Consists(std::string_view v, bool (*kind)(char), std::string_view extra) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [&](char c) {
    return kind(c) || extra.find(c) != std::string_view::npos;
  });
}

// The value in double quotes for a message: escaped, and cut after 64 bytes.
std::string Quote(std::string_view value) {
  constexpr size_t kShown = 64;
  std::string out = "\"";
  for (size_t i = 0; i < value.size() && i < kShown; ++i) {
    const char c = value[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  if (value.size() > kShown) out += "...";
  out += '"';
  return out;
}

// "<field>: <quoted value> is not <what>: <why>"; OK when `why` is empty.
Status Check(std::string_view value, std::string_view field, std::string_view what,
             const std::string& why) {
  if (why.empty()) return OkStatus();
  std::string message;
  if (!field.empty()) {
    message.append(field);
    message += ": ";
  }
  message += Quote(value);
  message += " is not ";
  message.append(what);
  message += ": ";
  message += why;
  return InvalidArgumentError(std::move(message));
}

std::string TooLong(std::string_view part, size_t size, int max) {
  std::string why(part);
  why += "must be at most " + std::to_string(max) + " bytes, got " + std::to_string(size);
  return why;
}

constexpr std::string_view kDnsLabelRule =
    "must consist of lower-case letters, digits and '-', and start and end with a letter or "
    "digit (e.g. \"gpu-0\")";
constexpr std::string_view kDnsSubdomainRule =
    "must consist of DNS labels (lower-case letters, digits and '-', starting and ending with a "
    "letter or digit) joined by '.' (e.g. \"gpu.example.com\")";
constexpr std::string_view kLabelNameRule =
    "must consist of letters, digits, '-', '_' and '.', and start and end with a letter or digit "
    "(e.g. \"my-key\" or \"Key_1.x\")";

// A DNS label without the length limit.
bool IsLabelShape(std::string_view v) {
  return Consists(v, IsLowerAlnum, "-") && IsLowerAlnum(v.front()) && IsLowerAlnum(v.back());
}

std::string DnsLabelProblem(std::string_view v) {
  if (v.empty()) return "must not be empty";
  if (v.size() > kMaxDnsLabelLength) return TooLong("", v.size(), kMaxDnsLabelLength);
  if (!IsLabelShape(v)) return std::string(kDnsLabelRule);
  return "";
}

bool IsSubdomainShape(std::string_view v) {
  size_t start = 0;
  while (true) {
    const size_t dot = v.find('.', start);
    if (!IsLabelShape(v.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string DnsSubdomainProblem(std::string_view v) {
  if (v.empty()) return "must not be empty";
  if (v.size() > kMaxDnsSubdomainLength) return TooLong("", v.size(), kMaxDnsSubdomainLength);
  if (!IsSubdomainShape(v)) return std::string(kDnsSubdomainRule);
  return "";
}

// Driver names and attribute domains: at most 63 bytes, a DNS subdomain once lower-cased.
std::string DriverNameProblem(std::string_view v, std::string_view part) {
  std::string why(part);
  if (v.empty()) return why + "must not be empty";
  if (v.size() > kMaxDriverNameLength) return TooLong(part, v.size(), kMaxDriverNameLength);
  if (!IsSubdomainShape(Lower(v))) return why + std::string(kDnsSubdomainRule);
  return "";
}

std::string CIdentifierProblem(std::string_view v, std::string_view part, int max) {
  std::string why(part);
  if (v.empty()) return why + "must not be empty";
  if (v.size() > static_cast<size_t>(max)) return TooLong(part, v.size(), max);
  if (!IsCIdentifier(v)) {
    return why + "must be a C identifier: a letter or '_', then letters, digits or '_'";
  }
  return "";
}

std::string QualifiedNameProblem(std::string_view v, bool require_domain) {
  if (v.empty()) return "must not be empty";
  const size_t slash = v.find('/');
  if (slash == std::string_view::npos) {
    if (require_domain) {
      return "must be <domain>/<name> with the domain, e.g. \"resource.kubernetes.io/pcieRoot\"";
    }
    return CIdentifierProblem(v, "", kMaxDeviceIdLength);
  }
  if (v.find('/', slash + 1) != std::string_view::npos) return "must contain at most one '/'";
  std::string why = DriverNameProblem(v.substr(0, slash), "the domain before '/' ");
  if (!why.empty()) return why;
  return CIdentifierProblem(v.substr(slash + 1), "the name after '/' ", kMaxDeviceIdLength);
}

// The name part of a label key, and a non-empty label value.
bool IsLabelNameShape(std::string_view v) {
  return Consists(v, IsAlnum, "-_.") && IsAlnum(v.front()) && IsAlnum(v.back());
}

// Whole digits without a leading zero.
bool IsNumericIdentifier(std::string_view v) { return Consists(v, IsAsciiDigit, ""); }

bool IsSemverIdentifierChars(std::string_view v) { return Consists(v, IsAlnum, "-"); }

// The digits of a number in a version: 1.38's API server allows 18 (its numericIdentifier,
// `0|[1-9]\d{0,17}`, for MAJOR, MINOR, PATCH and digit-only pre-release identifiers), so that
// the number fits an int64 in CEL; 1.37 and older allow any length.
constexpr size_t kMaxSemverDigits = 18;

std::string SemverProblem(std::string_view v) {
  if (v.empty()) return "must not be empty";
  if (v.size() > kMaxAttributeValueLength) return TooLong("", v.size(), kMaxAttributeValueLength);
  if (v.front() == 'v' || v.front() == 'V') {
    return "must not start with \"v\"; write e.g. \"1.2.3\"";
  }
  const size_t core_end = v.find_first_of("-+");
  const std::string_view core = v.substr(0, core_end);
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t dot = core.find('.', start);
    if ((i < 2) == (dot == std::string_view::npos)) {
      return "must start with MAJOR.MINOR.PATCH, e.g. \"1.2.3\"";
    }
    const std::string_view number = core.substr(start, dot - start);
    if (!IsNumericIdentifier(number)) {
      return "must start with MAJOR.MINOR.PATCH, e.g. \"1.2.3\"";
    }
    if (number.size() > 1 && number[0] == '0') {
      return "MAJOR, MINOR and PATCH must not have leading zeros";
    }
    if (number.size() > kMaxSemverDigits) {
      return "MAJOR, MINOR and PATCH must have at most 18 digits";
    }
    start = dot + 1;
  }
  if (core_end == std::string_view::npos) return "";
  std::string_view rest = v.substr(core_end);
  if (rest.front() == '-') {
    const size_t plus = rest.find('+');
    std::string_view pre = rest.substr(1, plus == std::string_view::npos ? plus : plus - 1);
    while (true) {
      const size_t dot = pre.find('.');
      const std::string_view id = pre.substr(0, dot);
      if (!IsSemverIdentifierChars(id)) {
        return "pre-release identifiers after '-' must be non-empty and consist of letters, "
               "digits and '-'";
      }
      if (IsNumericIdentifier(id) && id.size() > 1 && id[0] == '0') {
        return "numeric pre-release identifier \"" + std::string(id) +
               "\" must not have leading zeros";
      }
      if (IsNumericIdentifier(id) && id.size() > kMaxSemverDigits) {
        return "numeric pre-release identifier \"" + std::string(id) +
               "\" must have at most 18 digits";
      }
      if (dot == std::string_view::npos) break;
      pre.remove_prefix(dot + 1);
    }
    if (plus == std::string_view::npos) return "";
    rest.remove_prefix(plus);
  }
  // rest starts with '+'.
  std::string_view build = rest.substr(1);
  while (true) {
    const size_t dot = build.find('.');
    if (!IsSemverIdentifierChars(build.substr(0, dot))) {
      return "build identifiers after '+' must be non-empty and consist of letters, digits and "
             "'-'";
    }
    if (dot == std::string_view::npos) return "";
    build.remove_prefix(dot + 1);
  }
}

std::string UuidProblem(std::string_view v) {
  bool ok = v.size() == 36;
  for (size_t i = 0; ok && i < v.size(); ++i) {
    ok = (i == 8 || i == 13 || i == 18 || i == 23) ? v[i] == '-' : IsHex(v[i]);
  }
  if (ok) return "";
  return "must be a lower-case UUID in 8-4-4-4-12 hex form, e.g. "
         "\"123e4567-e89b-12d3-a456-426614174000\"";
}

}  // namespace

bool IsDnsLabel(std::string_view value) { return DnsLabelProblem(value).empty(); }

bool IsDnsSubdomain(std::string_view value) { return DnsSubdomainProblem(value).empty(); }

bool IsCIdentifier(std::string_view value) {
  return Consists(value, IsAlnum, "_") && !IsAsciiDigit(value.front());
}

Status ValidateDnsLabel(std::string_view value, std::string_view field) {
  return Check(value, field, "a DNS label", DnsLabelProblem(value));
}

Status ValidateDnsSubdomain(std::string_view value, std::string_view field) {
  return Check(value, field, "a DNS subdomain", DnsSubdomainProblem(value));
}

Status ValidateCIdentifier(std::string_view value, std::string_view field) {
  return Check(value, field, "a C identifier",
               CIdentifierProblem(value, "", std::numeric_limits<int>::max()));
}

Status ValidateQualifiedName(std::string_view value, std::string_view field) {
  return Check(value, field, "a qualified name", QualifiedNameProblem(value, false));
}

Status ValidateFullyQualifiedName(std::string_view value, std::string_view field) {
  return Check(value, field, "a fully qualified name", QualifiedNameProblem(value, true));
}

Status ValidateLabelKey(std::string_view value, std::string_view field) {
  std::string why;
  const size_t slash = value.find('/');
  std::string_view name = value;
  if (value.empty()) {
    why = "must not be empty";
  } else if (slash != std::string_view::npos &&
             value.find('/', slash + 1) != std::string_view::npos) {
    why = "must contain at most one '/'";
  } else if (slash != std::string_view::npos) {
    const std::string prefix_why = DnsSubdomainProblem(value.substr(0, slash));
    if (!prefix_why.empty()) why = "the prefix before '/' " + prefix_why;
    name = value.substr(slash + 1);
  }
  if (why.empty()) {
    if (name.empty()) {
      why = "the name must not be empty";
    } else if (name.size() > kMaxDnsLabelLength) {
      why = TooLong("the name ", name.size(), kMaxDnsLabelLength);
    } else if (!IsLabelNameShape(name)) {
      why = "the name " + std::string(kLabelNameRule);
    }
  }
  return Check(value, field, "a label key", why);
}

Status ValidateLabelValue(std::string_view value, std::string_view field) {
  std::string why;
  if (value.size() > kMaxLabelValueLength) {
    why = TooLong("", value.size(), kMaxLabelValueLength);
  } else if (!value.empty() && !IsLabelNameShape(value)) {
    why = std::string(kLabelNameRule) + ", or be empty";
  }
  return Check(value, field, "a label value", why);
}

Status ValidatePoolName(std::string_view value, std::string_view field) {
  std::string why;
  if (value.empty()) {
    why = "must not be empty";
  } else if (value.size() > kMaxPoolNameLength) {
    why = TooLong("", value.size(), kMaxPoolNameLength);
  } else {
    size_t start = 0;
    while (why.empty()) {
      const size_t slash = value.find('/', start);
      const std::string_view part = value.substr(start, slash - start);
      if (!IsSubdomainShape(part)) {
        why = "must be DNS subdomains joined by '/': part " + Quote(part) + " " +
              std::string(kDnsSubdomainRule);
      }
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
  }
  return Check(value, field, "a pool name", why);
}

Status ValidateDriverName(std::string_view value, std::string_view field) {
  return Check(value, field, "a driver name", DriverNameProblem(value, ""));
}

Status ValidateAnnotationKey(std::string_view value, std::string_view field) {
  const std::string lower = Lower(value);
  Status status = ValidateLabelKey(lower, field);
  if (status.ok() || lower == value) return status;
  return Check(value, field, "an annotation key",
               status.message().substr(status.message().find(" is not a label key: ") +
                                       std::string_view(" is not a label key: ").size()));
}

Status ValidateGenerateName(std::string_view value, std::string_view field) {
  std::string masked(value);
  if (!masked.empty() && masked.back() == '-') masked.back() = 'a';
  return Check(value, field, "a generateName prefix", DnsSubdomainProblem(masked));
}

Status ValidateTimestamp(std::string_view value, std::string_view field) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  auto digits = [&](size_t at, size_t n) {
    if (at + n > value.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!IsAsciiDigit(value[i])) return false;
    }
    return true;
  };
  auto at = [&](size_t i, char c) { return i < value.size() && value[i] == c; };
  bool ok = digits(0, 4) && at(4, '-') && digits(5, 2) && at(7, '-') && digits(8, 2) &&
            (at(10, 'T') || at(10, 't')) && digits(11, 2) && at(13, ':') && digits(14, 2) &&
            at(16, ':') && digits(17, 2);
  size_t i = 19;
  if (ok && at(i, '.')) {
    ++i;
    const size_t start = i;
    while (i < value.size() && IsAsciiDigit(value[i])) ++i;
    ok = i > start;
  }
  if (ok) {
    if (at(i, 'Z') || at(i, 'z')) {
      ok = i + 1 == value.size();
    } else if (at(i, '+') || at(i, '-')) {
      ok = digits(i + 1, 2) && at(i + 3, ':') && digits(i + 4, 2) && i + 6 == value.size();
    } else {
      ok = false;
    }
  }
  return Check(value, field, "an RFC 3339 time",
               ok ? "" : "must look like \"2006-01-02T15:04:05Z\"");
}

Status ValidateNodeName(std::string_view value, std::string_view field) {
  return Check(value, field, "a node name", DnsSubdomainProblem(value));
}

Status ValidateAttributeString(std::string_view value, std::string_view field) {
  std::string why;
  if (value.size() > kMaxAttributeValueLength) {
    why = TooLong("", value.size(), kMaxAttributeValueLength);
  }
  return Check(value, field, "a string attribute value", why);
}

Status ValidateVersionAttribute(std::string_view value, std::string_view field) {
  return Check(value, field, "a semantic version", SemverProblem(value));
}

Status ValidateUuid(std::string_view value, std::string_view field) {
  return Check(value, field, "a UUID", UuidProblem(value));
}

std::string_view FieldErrorReason(FieldErrorType type) {
  static constexpr std::string_view kReasons[] = {
      "FieldValueInvalid",   "FieldValueRequired", "FieldValueDuplicate", "FieldValueNotSupported",
      "FieldValueForbidden", "FieldValueTooLong",  "FieldValueTooMany",
  };
  static_assert(NamesCover(kReasons, FieldErrorType::kTooMany));
  return NameAt(kReasons, type).value_or("FieldValueInvalid");
}

std::string FieldError::ToString() const { return field.empty() ? detail : field + ": " + detail; }

Status ToStatus(const FieldErrors& errors) {
  if (errors.empty()) return OkStatus();
  std::string message = errors.front().ToString();
  if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more)";
  return InvalidArgumentError(std::move(message));
}

std::string JoinFieldErrors(const FieldErrors& errors) {
  if (errors.size() == 1) return errors.front().ToString();
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) out += ", ";
    out += errors[i].ToString();
  }
  return out + "]";
}

FieldError FieldErrorFromStatus(const Status& status, const std::string& field) {
  std::string detail = status.message();
  if (!field.empty() && detail.rfind(field + ": ", 0) == 0) detail.erase(0, field.size() + 2);
  return FieldError{FieldErrorType::kInvalid, field, "Invalid value: " + detail};
}

std::optional<KubeVersion> ParseKubeVersion(std::string_view text) {
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  if (text.size() > 4 && text.substr(4, 1) == ".") text = text.substr(0, 4);
  if (text == "1.34") return KubeVersion::k1_34;
  if (text == "1.35") return KubeVersion::k1_35;
  return std::nullopt;
}

std::string_view KubeVersionName(KubeVersion version) {
  return version == KubeVersion::k1_34 ? "1.34" : "1.35";
}

Limits LimitsFor(KubeVersion version) {
  Limits limits;
  if (version == KubeVersion::k1_35) {
    limits.max_devices_per_slice_with_taints_or_counters = 64;
    limits.max_taints_per_device = 16;
    limits.max_shared_counters_per_slice = Limits::kNoLimit;
    limits.max_counter_sets_per_slice = 8;
    limits.max_counters_per_counter_set = 32;
    limits.max_counters_per_device = Limits::kNoLimit;
    limits.max_device_counters_per_slice = Limits::kNoLimit;
    limits.max_counter_consumptions_per_device = 2;
    limits.max_counters_per_counter_consumption = 32;
    limits.slice_may_mix_devices_and_counters = false;
    limits.counter_sets_pool_wide = true;
    limits.taint_effect_none_allowed = true;
  }
  return limits;
}

}  // namespace xpu::api
