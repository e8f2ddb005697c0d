// Semantic versions (semver 2.0.0) and the version ranges of the controller's support matrix
// (controller/config.h): ">=535.0.0 <600.0.0", ">=8.0.0", "=24.1.0". Value types, no exceptions.
#ifndef XPU_CONTROLLER_SEMVER_H_
#define XPU_CONTROLLER_SEMVER_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::controller {

// A semver range: comparators (>=, >, <=, <, = and a version, blanks allowed between them)
// separated by spaces or commas, all of which must hold. Pre-release versions order before their
// release (semver 2.0.0 precedence); build metadata is ignored.
struct VersionRange {
  std::string text;  // as written
  friend bool operator==(const VersionRange&, const VersionRange&) = default;
};

// Parses and checks a range; errors (invalid-argument) name the bad comparator:
// `comparator ">=535.0": "535.0" is not a semantic version (expected MAJOR.MINOR.PATCH)`.
Status ValidateVersionRange(std::string_view text);

// Whether `version` (semver) lies in `range`; false for a version that is not semver and for a
// range that does not parse.
bool InRange(const VersionRange& range, std::string_view version);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_SEMVER_H_
