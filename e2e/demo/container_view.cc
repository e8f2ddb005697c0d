#include "e2e/demo/container_view.h"

#include <sstream>
#include <string>
#include <vector>

#include "base/text.h"

namespace xpu::demo {
namespace {

using Json = nlohmann::json;

struct PodView {
  std::string pod, node, allocated, nodes, library, files;
  bool seen = false;
};

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

bool IsDriverFile(const std::string& path) {
  for (const char* prefix : {"/usr/lib", "/usr/bin", "/usr/local/", "/lib/firmware", "/etc/hccn",
                             "/etc/ascend", "/opt/", "/run/nvidia"}) {
    if (path.starts_with(prefix)) return true;
  }
  return false;
}

PodView ViewOf(const Json& p) {
  PodView v;
  v.pod = p.value("pod", "");
  v.node = p.value("node", "");
  std::vector<std::string> allocated;
  for (const Json& d : p.value("allocated", Json::array())) {
    if (d.is_string()) allocated.push_back(d.get<std::string>());
  }
  v.allocated = Join(allocated);
  const Json& seen = p.contains("seen") ? p["seen"] : Json();
  if (!seen.is_object()) return v;
  v.seen = true;
  std::vector<std::string> nodes;
  for (const Json& n : seen.value("deviceNodes", Json::array())) {
    nodes.push_back(n.value("path", ""));
  }
  v.nodes = Join(nodes);
  std::vector<std::string> libs;
  for (const Json& l : seen.value("libraries", Json::array())) {
    if (!l.value("loaded", false)) continue;
    libs.push_back(l.value("soname", "") + ": " + std::to_string(l.value("deviceCount", 0)) +
                   " devices");
  }
  v.library = libs.empty() ? "none loaded" : Join(libs);
  int files = 0;
  for (const Json& m : seen.value("mounts", Json::array())) {
    files += IsDriverFile(m.value("path", "")) ? 1 : 0;
  }
  v.files = std::to_string(files) + (seen.value("ldCache", false) ? ", loader cache written" : "");
  return v;
}

std::vector<PodView> Views(const Json& containers) {
  std::vector<PodView> out;
  if (!containers.is_object()) return out;
  for (const Json& p : containers.value("pods", Json::array())) {
    if (p.is_object()) out.push_back(ViewOf(p));
  }
  return out;
}

}  // namespace

std::string ContainersHtml(const Json& containers) {
  std::ostringstream h;
  h << "<h2>Real containers</h2>\n";
  const std::vector<PodView> views = Views(containers);
  if (views.empty()) {
    h << "<p>No container results (the runtime did not run here).</p>\n";
    return h.str();
  }
  h << "<p>Pods run by the real kubelet over " << HtmlEscape(containers.value("runtime", ""))
    << " on fixture hosts, each printing what its container sees (xpu-container-check): the "
       "device nodes, the vendor library loaded by its name through the loader cache xpu-cdi-hook "
       "wrote, and the driver files xpu-dra's CDI spec mounted. The image holds no vendor "
       "file.</p>\n<table><tr><th>pod</th><th>node</th><th>allocated</th><th>device nodes "
       "seen</th><th>vendor library</th><th>driver files</th></tr>\n";
  for (const PodView& v : views) {
    h << "<tr><td>" << HtmlEscape(v.pod) << "</td><td>" << HtmlEscape(v.node) << "</td><td>"
      << HtmlEscape(v.allocated) << "</td>";
    if (!v.seen) {
      h << "<td colspan=\"3\">no report from the container</td></tr>\n";
      continue;
    }
    h << "<td>" << HtmlEscape(v.nodes) << "</td><td>" << HtmlEscape(v.library) << "</td><td>"
      << HtmlEscape(v.files) << "</td></tr>\n";
  }
  h << "</table>\n";
  return h.str();
}

std::string ContainersSummary(const Json& containers) {
  std::ostringstream out;
  for (const PodView& v : Views(containers)) {
    out << "  " << v.pod << " on " << v.node << ": allocated " << v.allocated << "; ";
    if (v.seen) {
      out << "saw " << v.nodes << "; " << v.library << "; driver files " << v.files << "\n";
    } else {
      out << "no report from the container\n";
    }
  }
  return out.str();
}

}  // namespace xpu::demo
