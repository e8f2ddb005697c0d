// xpuctl render: a capability request as the objects to apply (controller/render.h).
#include "controller/render.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/name_list.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunRender(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"yaml", "json"}));
  const std::string& path = flags.at("request");
  ASSIGN_OR_RETURN(const std::string text, ReadInputFile("request", path));
  StatusOr<controller::CapabilityRequest> request = controller::ParseCapabilityRequest(text);
  if (!request.ok()) return request.status().WithContext("read request " + path);
  controller::RenderOptions options;
  ASSIGN_OR_RETURN(options.config, LoadConfigFlag(flags));
  // The mode decides the subrequests (a group device or a matchAttribute): the config's, else
  // the default of --kubernetes-version, else of the newest release supported.
  int minor = controller::kNewestKubeMinor;
  if (auto it = flags.find("kubernetes-version"); it != flags.end()) {
    ASSIGN_OR_RETURN(minor, controller::ParseKubeMinor(it->second, "--kubernetes-version"));
  }
  options.config = controller::WithEffectiveMode(std::move(options.config), minor);
  if (auto it = flags.find("vendor"); it != flags.end()) {
    ASSIGN_OR_RETURN(options.vendors, SplitNameList(it->second));
  }
  if (auto it = flags.find("cdi-driver-files"); it != flags.end()) {
    ASSIGN_OR_RETURN(const driverfiles::Policy policy,
                     driverfiles::ParsePolicy(it->second, "--cdi-driver-files"));
    for (const std::string_view vendor : driverfiles::Vendors()) {
      if (policy.For(vendor) == driverfiles::Mode::kOff) {
        options.driver_files_off.emplace(vendor);
      }
    }
  }
  StatusOr<controller::Rendered> rendered = controller::Render(*request, options);
  if (!rendered.ok()) return rendered.status().WithContext("request " + path);
  if (format == "json") {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", rendered->objects}};
    PrintDocument(list, format, out);
    for (const std::string& note : rendered->notes) std::cerr << "note: " << note << "\n";
    return kExitOk;
  }
  out << "# " << request->name << ": " << request->count << " x " << request->capability_class
      << " (" << request->topology << ")\n";
  // One line per firstAvailable subrequest, in the claim's order. The models a line names are
  // those it is for; a model no subrequest takes is named by the vendor's note.
  for (const controller::VendorRender& v : rendered->vendors) {
    for (const controller::SubrequestRender& s : v.subrequests) {
      out << "#   " << s.name << ": " << v.device_class;
      std::vector<std::string> match;
      for (const std::string* attribute : {&s.constraint, &s.tier}) {
        if (!attribute->empty() && s.group_size == 0 && s.count > 1) match.push_back(*attribute);
      }
      if (!match.empty()) out << ", matchAttribute " << JoinNames(match, " + ");
      if (s.group_size > 0) {
        out << ", one group of " << s.group_size;
      } else {
        out << ", " << s.count << (s.singles ? " single devices" : " devices");
      }
      if (!s.models.empty()) {
        out << ", for " << JoinNames(s.models, ", ");
      } else if (!v.excluded_models.empty()) {
        out << ", every model but " << JoinNames(v.excluded_models, ", ");
      }
      if (!v.runtime_class.empty()) out << ", RuntimeClass " << v.runtime_class;
      out << " (fits " << JoinNames(s.servers, ", ") << ")\n";
    }
  }
  for (const std::string& note : rendered->notes) out << "# note: " << note << "\n";
  for (const nlohmann::json& object : rendered->objects) {
    out << "---\n";
    PrintDocument(object, format, out);
  }
  return kExitOk;
}

}  // namespace xpu::cli::internal
