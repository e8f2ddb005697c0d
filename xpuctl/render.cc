// xpuctl render: a capability request as the objects to apply (controller/render.h).
#include "controller/render.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/name_list.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunRender(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"yaml", "json"}));
  const std::string& path = flags.at("request");
  std::ifstream file(path);
  if (!file) return NotFoundError("read request " + path + ": cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  StatusOr<controller::CapabilityRequest> request = controller::ParseCapabilityRequest(text.str());
  if (!request.ok()) return request.status().WithContext("read request " + path);
  controller::RenderOptions options;
  ASSIGN_OR_RETURN(options.config, LoadConfigFlag(flags));
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
  for (const controller::VendorRender& v : rendered->vendors) {
    out << "#   " << v.vendor << ": " << v.device_class;
    if (v.group_size > 0) out << ", one group of " << v.group_size;
    if (!v.constraint.empty()) out << ", matchAttribute " << v.constraint;
    if (!v.excluded_models.empty()) out << ", not on " << JoinNames(v.excluded_models, ", ");
    if (!v.runtime_class.empty()) out << ", RuntimeClass " << v.runtime_class;
    out << " (fits " << JoinNames(v.servers, ", ") << ")\n";
  }
  for (const std::string& note : rendered->notes) out << "# note: " << note << "\n";
  for (const nlohmann::json& object : rendered->objects) {
    out << "---\n";
    PrintDocument(object, format, out);
  }
  return kExitOk;
}

}  // namespace xpu::cli::internal
