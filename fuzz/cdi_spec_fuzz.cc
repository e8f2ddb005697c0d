// CDI specs (kubeletplugin/cdi/cdi.h): the plugin reads its own specs back from the CDI directory
// at start-up and from the checkpoint after a reboot. The input is a spec file.
//
// Invariants: a spec that parses passes Validate, and writes a document that parses to an equal
// spec and writes the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/cdi/cdi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xpu::StatusOr<xpu::cdi::Spec> spec =
      xpu::cdi::FromJson(std::string(xpu::fuzz::AsText(data, size)));
  if (!spec.ok()) return 0;
  const xpu::Status valid = xpu::cdi::Validate(*spec);
  FUZZ_CHECK(valid.ok(), valid.ToString());
  const std::string encoded = xpu::cdi::ToJson(*spec);
  xpu::StatusOr<xpu::cdi::Spec> again = xpu::cdi::FromJson(encoded);
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + encoded);
  FUZZ_CHECK(*again == *spec, encoded);
  FUZZ_CHECK(xpu::cdi::ToJson(*again) == encoded, encoded);
  for (const xpu::cdi::Device& device : spec->devices) {
    (void)xpu::cdi::QualifiedName(spec->kind, device.name);
  }
  return 0;
}
