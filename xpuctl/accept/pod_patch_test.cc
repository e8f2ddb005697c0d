// PatchPodSpec: each rule of pod_patch.h on a pod spec like render's, as a table of
// spec + patch -> the patched spec, then the errors.
#include "xpuctl/accept/pod_patch.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"

namespace xpu::accept {
namespace {

using nlohmann::json;

// A pod spec as render writes it: the workload container on the claim `accelerators`.
json RenderedSpec() {
  return json::parse(R"({
    "restartPolicy": "Never",
    "containers": [{
      "name": "workload", "image": "img:1", "command": ["python3", "-m", "xpu_acceptance"],
      "args": ["--stages", "environment"],
      "env": [{"name": "XPU_ACCEPT_VENDOR", "value": "nvidia"},
              {"name": "XPU_ACCEPT_STAGES", "value": "environment"}],
      "resources": {"claims": [{"name": "accelerators"}]},
      "terminationMessagePolicy": "FallbackToLogsOnError"}],
    "resourceClaims": [{"name": "accelerators", "resourceClaimTemplateName": "acc-nvidia"}]
  })");
}

struct PatchCase {
  std::string rule;
  std::string patch;     // JSON
  std::string pointer;   // a JSON pointer into the patched spec
  std::string expected;  // JSON: the value there; "<absent>": none
};

TEST_CASE("PatchPodSpec: each rule", "[accept][pod_patch]") {
  const std::vector<PatchCase> cases = {
      {"no patch: the spec as it was", "{}", "", RenderedSpec().dump()},
      // RFC 7386 for the other fields.
      {"a scalar field is set", R"({"hostNetwork": true})", "/hostNetwork", "true"},
      {"null deletes a field", R"({"restartPolicy": null})", "/restartPolicy", "<absent>"},
      {"an object is merged", R"({"nodeSelector": {"pool": "a"}})", "/nodeSelector",
       R"({"pool": "a"})"},
      {"another list is replaced whole", R"({"schedulingGates": [{"name": "g"}]})",
       "/schedulingGates", R"([{"name": "g"}])"},
      // Containers by name: fields replaced, objects merged, other lists replaced.
      {"a container's scalar field is replaced",
       R"({"containers": [{"name": "workload", "imagePullPolicy": "Never", "image": "img:2"}]})",
       "/containers/0/image", R"("img:2")"},
      {"a container's new field is added",
       R"({"containers": [{"name": "workload", "imagePullPolicy": "Never"}]})",
       "/containers/0/imagePullPolicy", R"("Never")"},
      {"the container's other fields stay",
       R"({"containers": [{"name": "workload", "imagePullPolicy": "Never"}]})",
       "/containers/0/args", R"(["--stages", "environment"])"},
      {"a container's object is merged (the claims stay)",
       R"({"containers": [{"name": "workload", "resources": {"limits": {"memory": "1Gi"}}}]})",
       "/containers/0/resources",
       R"({"claims": [{"name": "accelerators"}], "limits": {"memory": "1Gi"}})"},
      {"a container's other list is replaced whole",
       R"({"containers": [{"name": "workload", "command": ["sh"]}]})", "/containers/0/command",
       R"(["sh"])"},
      {"null deletes a container's field",
       R"({"containers": [{"name": "workload", "terminationMessagePolicy": null}]})",
       "/containers/0/terminationMessagePolicy", "<absent>"},
      {"a container with a new name is appended",
       R"({"containers": [{"name": "sidecar", "image": "s:1"}]})", "/containers",
       R"([)" + RenderedSpec().at("containers")[0].dump() +
           R"(, {"name": "sidecar", "image": "s:1"}])"},
      {"$patch: delete removes a container",
       R"({"containers": [{"name": "sidecar", "image": "s:1"}, {"name": "sidecar", "$patch": "delete"}],
           "initContainers": [{"name": "init", "$patch": "delete"}]})",
       "/containers", R"([)" + RenderedSpec().at("containers")[0].dump() + "]"},
      {"initContainers are merged by name too",
       R"({"initContainers": [{"name": "init", "image": "i:1"}]})", "/initContainers",
       R"([{"name": "init", "image": "i:1"}])"},
      // env by name, volumeMounts by mountPath, volumeDevices by devicePath, ports by
      // containerPort.
      {"env: a new variable is appended, one of the same name replaced whole",
       R"({"containers": [{"name": "workload", "env": [
           {"name": "XPU_ACCEPT_DEVICE", "value": "cpu"},
           {"name": "XPU_ACCEPT_VENDOR", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}]})",
       "/containers/0/env",
       R"([{"name": "XPU_ACCEPT_VENDOR", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
           {"name": "XPU_ACCEPT_STAGES", "value": "environment"},
           {"name": "XPU_ACCEPT_DEVICE", "value": "cpu"}])"},
      {"env: $patch: delete removes a variable",
       R"({"containers": [{"name": "workload", "env": [
           {"name": "XPU_ACCEPT_VENDOR", "$patch": "delete"}]}]})",
       "/containers/0/env", R"([{"name": "XPU_ACCEPT_STAGES", "value": "environment"}])"},
      {"volumeMounts by mountPath",
       R"({"containers": [{"name": "workload", "volumeMounts": [
           {"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/a", "readOnly": true},
           {"name": "c", "mountPath": "/c"}]}]})",
       "/containers/0/volumeMounts",
       R"([{"name": "b", "mountPath": "/a", "readOnly": true}, {"name": "c", "mountPath": "/c"}])"},
      {"volumeDevices by devicePath",
       R"({"containers": [{"name": "workload", "volumeDevices": [
           {"name": "a", "devicePath": "/dev/a"}, {"name": "b", "devicePath": "/dev/a"}]}]})",
       "/containers/0/volumeDevices", R"([{"name": "b", "devicePath": "/dev/a"}])"},
      {"ports by containerPort",
       R"({"containers": [{"name": "workload", "ports": [
           {"containerPort": 29500}, {"containerPort": 29500, "name": "rdzv"},
           {"containerPort": 8080}]}]})",
       "/containers/0/ports",
       R"([{"containerPort": 29500, "name": "rdzv"}, {"containerPort": 8080}])"},
      // volumes, imagePullSecrets, resourceClaims by name; hostAliases by ip.
      {"volumes: appended, and one of the same name replaced whole",
       R"({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "usr", "hostPath": {"path": "/usr"}},
                       {"name": "data", "hostPath": {"path": "/data"}}]})",
       "/volumes",
       R"([{"name": "data", "hostPath": {"path": "/data"}}, {"name": "usr", "hostPath": {"path": "/usr"}}])"},
      {"imagePullSecrets by name",
       R"({"imagePullSecrets": [{"name": "regcred"}, {"name": "regcred"}, {"name": "other"}]})",
       "/imagePullSecrets", R"([{"name": "regcred"}, {"name": "other"}])"},
      {"hostAliases by ip",
       R"({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]},
                           {"ip": "10.0.0.1", "hostnames": ["b"]}]})",
       "/hostAliases", R"([{"ip": "10.0.0.1", "hostnames": ["b"]}])"},
      {"resourceClaims: a new claim is appended, render's stays",
       R"({"resourceClaims": [{"name": "scratch", "resourceClaimName": "s"}]})", "/resourceClaims",
       R"([{"name": "accelerators", "resourceClaimTemplateName": "acc-nvidia"},
           {"name": "scratch", "resourceClaimName": "s"}])"},
      {"resourceClaims: restating render's claim as it is changes nothing",
       R"({"resourceClaims": [{"name": "accelerators", "resourceClaimTemplateName": "acc-nvidia"}]})",
       "/resourceClaims",
       R"([{"name": "accelerators", "resourceClaimTemplateName": "acc-nvidia"}])"},
      // tolerations appended, equal ones once.
      {"tolerations are appended, each once",
       R"({"tolerations": [{"operator": "Exists"}, {"key": "k", "operator": "Exists"},
                           {"operator": "Exists"}]})",
       "/tolerations", R"([{"operator": "Exists"}, {"key": "k", "operator": "Exists"}])"},
      {"a merged list set to null is deleted", R"({"volumes": null, "tolerations": null})",
       "/volumes", "<absent>"},
  };
  for (const PatchCase& c : cases) {
    INFO(c.rule << "\npatch: " << c.patch);
    const json patched = testing::RequireValue(PatchPodSpec(RenderedSpec(), json::parse(c.patch)));
    const json::json_pointer pointer(c.pointer);
    if (c.expected == "<absent>") {
      CHECK_FALSE(patched.contains(pointer));
    } else {
      REQUIRE(patched.contains(pointer));
      CHECK(patched.at(pointer) == json::parse(c.expected));
    }
  }
}

TEST_CASE("PatchPodSpec: tolerations already in the spec are not repeated", "[accept][pod_patch]") {
  json spec = RenderedSpec();
  spec["tolerations"] = json::parse(R"([{"key": "gpu", "operator": "Exists"}])");
  const json patched = testing::RequireValue(
      PatchPodSpec(spec, json::parse(R"({"tolerations": [{"key": "gpu", "operator": "Exists"},
                                             {"key": "npu", "operator": "Exists"}]})")));
  CHECK(patched.at("tolerations") ==
        json::parse(
            R"([{"key": "gpu", "operator": "Exists"}, {"key": "npu", "operator": "Exists"}])"));
}

TEST_CASE("PatchPodSpec: the site patch of the upstream trial on a gang's pod",
          "[accept][pod_patch]") {
  json spec = RenderedSpec();
  spec["hostNetwork"] = true;
  spec["resourceClaims"] = json::parse(R"([{"name": "gang", "resourceClaimName": "g-gang"},
                                           {"name": "devices", "resourceClaimTemplateName": "g-member"}])");
  spec["containers"][0]["resources"]["claims"] =
      json::parse(R"([{"name": "gang"}, {"name": "devices"}])");
  const json patch = json::parse(R"({
    "hostNetwork": true, "terminationGracePeriodSeconds": 5,
    "containers": [{"name": "workload", "imagePullPolicy": "Never",
                    "env": [{"name": "XPU_ACCEPT_DEVICE", "value": "cpu"}],
                    "volumeMounts": [{"name": "venv", "mountPath": "/venv", "readOnly": true}]}],
    "volumes": [{"name": "venv", "hostPath": {"path": "/venv", "type": "Directory"}}]})");
  const json patched = testing::RequireValue(PatchPodSpec(spec, patch));
  REQUIRE(patched.at("containers").size() == 1);
  const json& c = patched.at("containers")[0];
  CHECK(c.at("image") == "img:1");
  CHECK(c.at("imagePullPolicy") == "Never");
  CHECK(c.at("env").size() == 3);
  CHECK(c.at("env")[0] == json::parse(R"({"name": "XPU_ACCEPT_VENDOR", "value": "nvidia"})"));
  CHECK(c.at("env")[2] == json::parse(R"({"name": "XPU_ACCEPT_DEVICE", "value": "cpu"})"));
  CHECK(c.at("volumeMounts").size() == 1);
  CHECK(c.at("resources").at("claims") == spec["containers"][0]["resources"]["claims"]);
  CHECK(patched.at("resourceClaims") == spec.at("resourceClaims"));
  CHECK(patched.at("volumes").size() == 1);
  CHECK(patched.at("terminationGracePeriodSeconds") == 5);
}

TEST_CASE("PatchPodSpec: errors name the patch's field", "[accept][pod_patch]") {
  const auto error = [](const std::string& patch) {
    StatusOr<json> r = PatchPodSpec(RenderedSpec(), json::parse(patch));
    INFO(patch);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  using Catch::Matchers::StartsWith;
  CHECK_THAT(error("[]"), StartsWith("expected a mapping (a patch of the pod spec), got []"));
  CHECK_THAT(error(R"({"containers": {"name": "workload"}})"),
             StartsWith("containers: expected a list, got {"));
  CHECK_THAT(error(R"({"containers": [{"image": "x"}]})"),
             StartsWith("containers[0]: expected a mapping with a name, got {"));
  CHECK_THAT(error(R"({"containers": [{"name": "workload", "env": [{"value": "x"}]}]})"),
             StartsWith("containers[0].env[0]: expected a mapping with a name"));
  CHECK_THAT(error(R"({"containers": [{"name": "workload", "volumeMounts": [{"name": "a"}]}]})"),
             StartsWith("containers[0].volumeMounts[0]: expected a mapping with a mountPath"));
  CHECK_THAT(error(R"({"containers": [{"name": "workload", "env": "x"}]})"),
             StartsWith("containers[0].env: expected a list"));
  CHECK_THAT(error(R"({"volumes": [{"name": "a", "$patch": "replace"}]})"),
             StartsWith("volumes[0].$patch: expected delete, got \"replace\""));
  CHECK_THAT(error(R"({"tolerations": {"operator": "Exists"}})"),
             StartsWith("tolerations: expected a list"));
  // Render's claim and its use by the workload container cannot be patched away.
  for (const char* patch : {R"({"resourceClaims": [{"name": "accelerators", "$patch": "delete"}]})",
                            R"({"resourceClaims": null})"}) {
    CHECK(error(patch) ==
          "resourceClaims: the patch removes claim \"accelerators\", which container "
          "\"workload\" uses");
  }
  CHECK_THAT(
      error(R"({"resourceClaims": [{"name": "accelerators", "resourceClaimName": "mine"}]})"),
      StartsWith("resourceClaims: the patch replaces claim \"accelerators\", which "
                 "container \"workload\" uses ({\"name\":\"accelerators\","));
  for (const char* patch : {R"({"containers": [{"name": "workload", "$patch": "delete"}]})",
                            R"({"containers": null})"}) {
    CHECK(error(patch) ==
          "containers: the patch removes container \"workload\", which uses claim "
          "\"accelerators\"");
  }
  for (const char* patch :
       {R"({"containers": [{"name": "workload", "resources": {"claims": []}}]})",
        R"({"containers": [{"name": "workload", "resources": null}]})"}) {
    CHECK(error(patch) ==
          "containers[workload].resources.claims: the patch removes the container's use of "
          "claim \"accelerators\"");
  }
}

}  // namespace
}  // namespace xpu::accept
