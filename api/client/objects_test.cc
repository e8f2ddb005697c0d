// ObjectKey, and FakeObjects keeping objects apart by namespace and name.
#include "api/client/objects.h"

#include <catch2/catch.hpp>

#include "api/client/testing/fake_objects.h"
#include "api/core.h"
#include "base/testing/require_ok.h"

namespace xpu::api::client {
namespace {

using testing::FakeObjects;
using testing::FakeVerb;

core::Lease LeaseIn(const std::string& ns, const std::string& name, const std::string& holder) {
  core::Lease lease;
  lease.metadata.namespace_name = ns;
  lease.metadata.name = name;
  lease.spec.holder_identity = holder;
  return lease;
}

TEST_CASE("ObjectKey names an object for messages and orders by namespace then name", "[objects]") {
  CHECK(ObjectKey::Cluster("n1").String() == "n1");
  CHECK(ObjectKey::Cluster("n1").ns().empty());
  CHECK(ObjectKey::Namespaced("xpu-dra", "lease-a").String() == "xpu-dra/lease-a");
  CHECK(ObjectKey::Namespaced("xpu-dra", "lease-a").ns() == "xpu-dra");
  CHECK(ObjectKey::Namespaced("xpu-dra", "lease-a").name() == "lease-a");

  ObjectMeta meta;
  meta.namespace_name = "default";
  meta.name = "claim";
  CHECK(ObjectKey::Of(meta) == ObjectKey::Namespaced("default", "claim"));
  meta.namespace_name.clear();
  CHECK(ObjectKey::Of(meta) == ObjectKey::Cluster("claim"));

  // A cluster-scoped key is not the namespaced one of the same name, and the namespace orders
  // first.
  CHECK(ObjectKey::Cluster("a") != ObjectKey::Namespaced("a", "a"));
  CHECK(ObjectKey::Namespaced("a", "z") < ObjectKey::Namespaced("b", "a"));
  CHECK(ObjectKey::Namespaced("a", "a") < ObjectKey::Namespaced("a", "b"));
}

TEST_CASE("FakeObjects keeps same-named objects of two namespaces apart", "[objects]") {
  FakeObjects<core::Lease> leases("leases");
  REQUIRE_OK(leases.Create(LeaseIn("ns-a", "l", "a")));
  REQUIRE_OK(leases.Create(LeaseIn("ns-b", "l", "b")));
  CHECK(leases.Create(LeaseIn("ns-a", "l", "again")).status().code() == StatusCode::kAlreadyExists);

  CHECK(leases.Get(ObjectKey::Namespaced("ns-a", "l"))->spec.holder_identity == "a");
  CHECK(leases.Get(ObjectKey::Namespaced("ns-b", "l"))->spec.holder_identity == "b");
  StatusOr<core::Lease> missing = leases.Get(ObjectKey::Namespaced("ns-c", "l"));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "get leases ns-c/l: not found");

  REQUIRE_OK(leases.Delete(ObjectKey::Namespaced("ns-a", "l"), {}));
  CHECK_FALSE(leases.Find(ObjectKey::Namespaced("ns-a", "l")).has_value());
  CHECK(leases.Find(ObjectKey::Namespaced("ns-b", "l")).has_value());
  CHECK(leases.calls(FakeVerb::kGet) == 3);
  CHECK(leases.writes() == 3);
}

}  // namespace
}  // namespace xpu::api::client
