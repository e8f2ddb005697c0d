// Label and field selectors as the Kubernetes API server parses them from list/watch queries.
#ifndef XPU_E2E_KUBESIM_SELECTORS_H_
#define XPU_E2E_KUBESIM_SELECTORS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xpu::kubesim {

// One requirement: `key=v`, `key==v`, `key!=v`, `key`, `!key`, `key in (a,b)`, `key notin (a,b)`.
struct Requirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;
};

// A conjunction of requirements; the empty selector matches everything. Value type.
class Selector {
 public:
  Selector() = default;  // matches everything
  // Label selector syntax (all operators above).
  static StatusOr<Selector> ParseLabels(std::string_view text);
  // Field selector syntax (=, ==, != only) over the fields list/watch may filter on:
  // metadata.name, metadata.namespace, spec.nodeName, spec.driver, spec.pool.name.
  static StatusOr<Selector> ParseFields(std::string_view text);

  // Labels: matches obj.metadata.labels. Fields: matches the named fields of obj (absent = "").
  bool MatchesLabels(const nlohmann::json& obj) const;
  bool MatchesFields(const nlohmann::json& obj) const;
  bool empty() const { return requirements_.empty(); }

 private:
  explicit Selector(std::vector<Requirement> requirements)
      : requirements_(std::move(requirements)) {}

  std::vector<Requirement> requirements_;
};

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_SELECTORS_H_
