#include "kubeletplugin/cdihook/container_root.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace xpu::cdihook {
namespace {

using Json = nlohmann::json;

StatusOr<Json> Parse(std::string_view text, std::string_view what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(std::string(what) + " is not a JSON object");
  }
  return j;
}

// j[key] as a non-empty string, or "".
std::string StringAt(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

StatusOr<std::string> ContainerRootPath(std::string_view state_json, const ReadFn& read) {
  ASSIGN_OR_RETURN(const Json state, Parse(state_json, "the container state on stdin"));
  if (std::string root = StringAt(state, "root"); !root.empty()) return root;
  const std::string bundle = StringAt(state, "bundle");
  if (bundle.empty() || bundle.front() != '/') {
    return InvalidArgumentError("the container state names no absolute bundle path");
  }
  const std::string config_path = bundle + "/config.json";
  ASSIGN_OR_RETURN(const std::string config_text, read(config_path));
  ASSIGN_OR_RETURN(const Json config, Parse(config_text, config_path));
  const auto root = config.find("root");
  const std::string path = root != config.end() && root->is_object() ? StringAt(*root, "path") : "";
  if (path.empty()) return InvalidArgumentError(config_path + ": no root.path");
  return path.front() == '/' ? path : bundle + "/" + path;
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace xpu::cdihook
