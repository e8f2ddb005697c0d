#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

using nlohmann::json;

// True when YAML reads `text` unquoted back as the same string: an identifier-like word that is
// not one of YAML's booleans or nulls.
bool IsPlain(std::string_view text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text[0]))) return false;
  const bool word_chars = std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr std::array<std::string_view, 9> kReserved = {"true", "false", "null", "yes", "no",
                                                         "on",   "off",   "y",    "n"};
  return word_chars && std::find(kReserved.begin(), kReserved.end(), lower) == kReserved.end();
}

// JSON scalars, quoted strings included, are YAML scalars with the same meaning.
std::string Scalar(const json& j) {
  if (j.is_string() && IsPlain(j.get_ref<const std::string&>())) return j.get<std::string>();
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsInline(const json& j) {
  return !j.is_structured() || j.empty() ||
         (j.is_array() &&
          std::none_of(j.begin(), j.end(), [](const json& e) { return e.is_structured(); }));
}

std::string Inline(const json& j) {
  if (!j.is_structured()) return Scalar(j);
  if (j.is_object()) return "{}";
  std::string text = "[";
  for (const json& e : j) text += (text.size() > 1 ? ", " : "") + Scalar(e);
  return text + "]";
}

void AppendBlock(const json& j, size_t indent, std::string& out);

// The value after "key:" or "-", which the caller has written.
void AppendValue(const json& j, size_t indent, std::string& out) {
  if (IsInline(j)) {
    out += " " + Inline(j) + "\n";
  } else {
    out += "\n";
    AppendBlock(j, indent + 2, out);
  }
}

void AppendBlock(const json& j, size_t indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (j.is_object()) {
    for (const auto& item : j.items()) {
      out += pad + Scalar(item.key()) + ":";
      AppendValue(item.value(), indent, out);
    }
  } else {
    for (const json& e : j) {
      out += pad + "-";
      AppendValue(e, indent, out);
    }
  }
}

}  // namespace

std::string ToYaml(const json& doc) {
  if (IsInline(doc)) return Inline(doc) + "\n";
  std::string out;
  AppendBlock(doc, 0, out);
  return out;
}

void PrintDocument(const json& doc, std::string_view format, std::ostream& out) {
  if (format == "yaml") {
    out << ToYaml(doc);
  } else {
    out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
}

StatusOr<std::string> ReadInputFile(std::string_view what, const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return NotFoundError("read " + std::string(what) + " " + path + ": cannot open the file");
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

StatusOr<int> WriteOutput(const Flags& flags, std::ostream& out, const std::string& text) {
  auto file = flags.find("out");
  if (file == flags.end()) {
    out << text;
    return kExitOk;
  }
  std::ofstream stream(file->second, std::ios::binary | std::ios::trunc);
  stream << text;
  stream.close();
  if (!stream) return UnavailableError("write " + file->second + ": " + std::strerror(errno));
  return kExitOk;
}

}  // namespace xpu::cli::internal
