#include "e2e/kubesim/selectors.h"

#include <algorithm>
#include <array>

#include "base/text.h"

namespace xpu::kubesim {
namespace {

// Splits on commas that are not inside parentheses (the value lists of in/notin).
std::vector<std::string> SplitTerms(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.emplace_back(Trim(cur));
  return out;
}

Status BadSelector(std::string_view text, std::string_view why) {
  return Status(StatusCode::kFailedPrecondition,
                "unable to parse requirement \"" + std::string(text) + "\": " + std::string(why));
}

StatusOr<Requirement> ParseSetTerm(const std::string& term, size_t at, bool in) {
  Requirement r;
  r.key = Trim(std::string_view{term}.substr(0, at));
  r.op = in ? Requirement::Op::kIn : Requirement::Op::kNotIn;
  const auto open = term.find('(', at);
  const auto close = term.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return BadSelector(term, "expected a parenthesised value list");
  }
  for (auto& v : SplitTerms(std::string_view{term}.substr(open + 1, close - open - 1))) {
    r.values.push_back(v);
  }
  return r;
}

StatusOr<Requirement> ParseTerm(const std::string& term, bool fields) {
  Requirement r;
  if (auto pos = term.find("!="); pos != std::string::npos) {
    r.key = Trim(std::string_view{term}.substr(0, pos));
    r.op = Requirement::Op::kNotIn;
    r.values = {std::string(Trim(std::string_view{term}.substr(pos + 2)))};
  } else if (pos = term.find("=="); pos != std::string::npos) {
    r.key = Trim(std::string_view{term}.substr(0, pos));
    r.op = Requirement::Op::kIn;
    r.values = {std::string(Trim(std::string_view{term}.substr(pos + 2)))};
  } else if (pos = term.find('='); pos != std::string::npos) {
    r.key = Trim(std::string_view{term}.substr(0, pos));
    r.op = Requirement::Op::kIn;
    r.values = {std::string(Trim(std::string_view{term}.substr(pos + 1)))};
  } else if (fields) {
    return BadSelector(term, "a field selector needs =, == or !=");
  } else if (pos = term.find(" notin "); pos != std::string::npos) {
    return ParseSetTerm(term, pos, false);
  } else if (pos = term.find(" in "); pos != std::string::npos) {
    return ParseSetTerm(term, pos, true);
  } else if (term[0] == '!') {
    r.key = Trim(std::string_view{term}.substr(1));
    r.op = Requirement::Op::kDoesNotExist;
  } else {
    r.key = term;
    r.op = Requirement::Op::kExists;
  }
  if (r.key.empty()) return BadSelector(term, "empty key");
  return r;
}

Status Parse(std::string_view text, bool fields, std::vector<Requirement>* out) {
  if (Trim(text).empty()) return OkStatus();
  for (const auto& term : SplitTerms(text)) {
    if (term.empty()) return BadSelector(text, "empty term");
    ASSIGN_OR_RETURN(auto r, ParseTerm(term, fields));
    if (fields) {
      static constexpr std::array<std::string_view, 5> kFields = {
          "metadata.name", "metadata.namespace", "spec.nodeName", "spec.driver", "spec.pool.name"};
      if (std::find(kFields.begin(), kFields.end(), r.key) == kFields.end()) {
        return BadSelector(term, "field label not supported: " + r.key);
      }
    }
    out->push_back(std::move(r));
  }
  return OkStatus();
}

bool Matches(const Requirement& r, const std::string* value) {
  switch (r.op) {
    case Requirement::Op::kExists:
      return value != nullptr;
    case Requirement::Op::kDoesNotExist:
      return value == nullptr;
    case Requirement::Op::kIn:
      return value != nullptr &&
             std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    case Requirement::Op::kNotIn:
      return value == nullptr ||
             std::find(r.values.begin(), r.values.end(), *value) == r.values.end();
  }
  return false;
}

}  // namespace

StatusOr<Selector> Selector::ParseLabels(std::string_view text) {
  std::vector<Requirement> reqs;
  RETURN_IF_ERROR(Parse(text, /*fields=*/false, &reqs));
  return Selector(std::move(reqs));
}

StatusOr<Selector> Selector::ParseFields(std::string_view text) {
  std::vector<Requirement> reqs;
  RETURN_IF_ERROR(Parse(text, /*fields=*/true, &reqs));
  return Selector(std::move(reqs));
}

bool Selector::MatchesLabels(const nlohmann::json& obj) const {
  const nlohmann::json* labels = nullptr;
  if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) {
    if (auto l = m->find("labels"); l != m->end() && l->is_object()) labels = &*l;
  }
  for (const auto& r : requirements_) {
    std::string value;
    const std::string* found = nullptr;
    if (labels != nullptr) {
      if (auto v = labels->find(r.key); v != labels->end() && v->is_string()) {
        value = v->get<std::string>();
        found = &value;
      }
    }
    if (!Matches(r, found)) return false;
  }
  return true;
}

bool Selector::MatchesFields(const nlohmann::json& obj) const {
  for (const auto& r : requirements_) {
    // Field selectors compare absent fields as the empty string, as the API server does.
    std::string value;
    const nlohmann::json* cur = &obj;
    size_t start = 0;
    while (cur != nullptr && start <= r.key.size()) {
      const auto dot = r.key.find('.', start);
      const auto part =
          r.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      auto it = cur->is_object() ? cur->find(part) : cur->end();
      cur = cur->is_object() && it != cur->end() ? &*it : nullptr;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (cur != nullptr && cur->is_string()) value = cur->get<std::string>();
    if (!Matches(r, &value)) return false;
  }
  return true;
}

}  // namespace xpu::kubesim
