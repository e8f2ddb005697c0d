#include "controller/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace xpu::controller {
namespace {

using Json = nlohmann::ordered_json;

// Aliases can expand a small file into a huge tree (and yaml-cpp follows an alias to an enclosing
// node); both limits are far above any real configuration file.
constexpr int kMaxYamlDepth = 64;
constexpr size_t kMaxYamlNodes = 200'000;

Status YamlPathError(const std::string& path, std::string_view what) {
  return InvalidArgumentError(path.empty() ? std::string(what) : path + ": " + std::string(what));
}

bool IsPlainInt(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return false;
  return std::all_of(s.begin() + static_cast<long>(i), s.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool IsPlainFloat(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::string MarkText(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

class YamlConverter {
 public:
  StatusOr<Json> Convert(const YAML::Node& node, const std::string& path, int depth) {
    if (++nodes_ > kMaxYamlNodes) {
      return YamlPathError(path, "document too large (aliases expand it)");
    }
    if (depth > kMaxYamlDepth) return YamlPathError(path, "nested too deeply");
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Json(nullptr);
      case YAML::NodeType::Scalar: {
        const std::string& tag = node.Tag();
        if (tag == "?") return ResolvePlainScalar(node.Scalar());
        return Json(node.Scalar());  // quoted ("!") or explicitly tagged: a string
      }
      case YAML::NodeType::Sequence: {
        Json out = Json::array();
        size_t i = 0;
        for (const auto& item : node) {
          ASSIGN_OR_RETURN(Json value,
                           Convert(item, path + "[" + std::to_string(i) + "]", depth + 1));
          out.push_back(std::move(value));
          ++i;
        }
        return out;
      }
      case YAML::NodeType::Map: {
        Json out = Json::object();
        for (const auto& item : node) {
          if (!item.first.IsScalar()) {
            return YamlPathError(path,
                                 "keys must be strings (" + MarkText(item.first.Mark()) + ")");
          }
          const std::string key = item.first.Scalar();
          std::string member = path;
          if (!member.empty()) member += '.';
          member += key;
          if (out.contains(key)) return YamlPathError(member, "duplicate field");
          ASSIGN_OR_RETURN(Json value, Convert(item.second, member, depth + 1));
          out[key] = std::move(value);
        }
        return out;
      }
    }
    return Json(nullptr);
  }

 private:
  size_t nodes_ = 0;
};

// Parser events, dropped: ParseYamlDocument counts documents without building them.
class IgnoreEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

Json ResolvePlainScalar(const std::string& text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (IsPlainInt(text)) {
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc() && ptr == text.data() + text.size()) return value;
    return std::strtod(text.c_str(), nullptr);  // too large for int64
  }
  if (IsPlainFloat(text)) return std::strtod(text.c_str(), nullptr);
  return text;
}

StatusOr<Json> ParseYamlDocument(std::string_view text) {
  // Documents are counted first, up to a bound, and only a single one is built: for some input
  // ("{a},", a flow collection and a comma) yaml-cpp 0.7 reports empty documents without end,
  // which YAML::LoadAll would collect until memory runs out.
  constexpr int kMaxDocuments = 64;
  int documents = 0;
  YAML::Node doc;
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    IgnoreEvents ignore;
    while (documents <= kMaxDocuments && parser.HandleNextDocument(ignore)) ++documents;
    if (documents == 1) doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const std::string where = MarkText(e.mark);
    return InvalidArgumentError("invalid YAML" + (where.empty() ? "" : " at " + where) + ": " +
                                e.msg);
  }
  if (documents > kMaxDocuments) {
    return InvalidArgumentError("expected one document, got more than " +
                                std::to_string(kMaxDocuments));
  }
  if (documents > 1) {
    return InvalidArgumentError("expected one document, got " + std::to_string(documents));
  }
  if (documents == 0) return Json::object();
  try {
    YamlConverter converter;
    ASSIGN_OR_RETURN(Json root, converter.Convert(doc, "", 0));
    if (root.is_null()) return Json::object();  // an empty file: every member absent
    return root;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("invalid YAML: " + e.msg);
  }
}

}  // namespace xpu::controller
