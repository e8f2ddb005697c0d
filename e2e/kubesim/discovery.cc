#include "e2e/kubesim/discovery.h"

#include <algorithm>
#include <set>

#include "base/text.h"

namespace xpu::kubesim {
namespace {
namespace discovery_cc {

using nlohmann::json;

json ResourceList(const std::vector<ResourceType>& types, const std::string& group,
                  const std::string& version) {
  json resources = json::array();
  for (const auto& t : types) {
    if (t.group != group || !t.Serves(version)) continue;
    resources.push_back(
        {{"name", t.resource},
         {"singularName", Lower(t.kind)},
         {"namespaced", t.namespaced},
         {"kind", t.kind},
         {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}}});
    if (t.has_status) {
      resources.push_back({{"name", t.resource + "/status"},
                           {"singularName", ""},
                           {"namespaced", t.namespaced},
                           {"kind", t.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? version : group + "/" + version},
          {"resources", resources}};
}

json GroupDoc(const std::vector<ResourceType>& types, const std::string& group) {
  std::vector<std::string> versions;
  for (const auto& t : types) {
    if (t.group != group) continue;
    for (const auto& v : t.ServedVersions()) {
      if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
    }
  }
  if (versions.empty()) return nullptr;
  json list = json::array();
  for (const auto& v : versions) {
    std::string group_version = group;
    group_version += "/";
    group_version += v;
    list.push_back({{"groupVersion", group_version}, {"version", v}});
  }
  return {{"kind", "APIGroup"},
          {"apiVersion", "v1"},
          {"name", group},
          {"versions", list},
          {"preferredVersion", list[0]}};
}

}  // namespace discovery_cc
}  // namespace

nlohmann::json DiscoveryDocument(const std::vector<ResourceType>& types,
                                 const std::vector<std::string>& segs) {
  using namespace discovery_cc;  // NOLINT(google-build-using-namespace): this file's helpers
  if (segs.size() == 1 && segs[0] == "api") {
    return {{"kind", "APIVersions"},
            {"versions", {"v1"}},
            {"serverAddressByClientCIDRs",
             {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1"}}}}};
  }
  if (segs.size() == 2 && segs[0] == "api" && segs[1] == "v1") return ResourceList(types, "", "v1");
  if (segs.size() == 1 && segs[0] == "apis") {
    json groups = json::array();
    std::set<std::string> seen;
    for (const auto& t : types) {
      if (!t.group.empty() && seen.insert(t.group).second) {
        json g = GroupDoc(types, t.group);
        g.erase("kind");
        g.erase("apiVersion");
        groups.push_back(g);
      }
    }
    return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
  }
  if (segs.size() == 2 && segs[0] == "apis") return GroupDoc(types, segs[1]);
  if (segs.size() == 3 && segs[0] == "apis") {
    json list = ResourceList(types, segs[1], segs[2]);
    return list["resources"].empty() ? json() : list;
  }
  return nullptr;
}

}  // namespace xpu::kubesim
