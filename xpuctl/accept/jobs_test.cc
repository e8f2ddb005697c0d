// The Jobs of `accept render` on the acceptance script's class (two vendors, an image each).
// The whole output is compared with the goldens in testdata/ by xpuctl/accept_cli_test.cc.
#include "xpuctl/accept/jobs.h"

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"

namespace xpu::accept {
namespace {

using nlohmann::json;
using testing::RequireValue;

constexpr std::string_view kClass = "training-large-memory";

controller::Config JobsConfig() {
  const std::string text =
      "capabilityClasses:\n"
      "- {name: training-large-memory, vendors: [nvidia, huawei], minMemory: 64Gi, "
      "precisions: [bf16],\n"
      "   images: {nvidia: registry.example.com/acc/torch:cuda, huawei: "
      "registry.example.com/acc/torch:cann}}\n"
      "- {name: open-class, minMemory: 64Gi, images: {huawei: h:1}}\n";
  return testing::ParsedValue(controller::ParseConfig(text), text);
}

RenderRequest JobsRequest() {
  RenderRequest r;
  r.capability_class = std::string(kClass);
  return r;
}

const json* FindObject(const RenderedAcceptance& r, std::string_view kind, std::string_view name) {
  for (const json& o : r.objects) {
    if (o.at("kind") == kind && o.at("metadata").at("name") == name) return &o;
  }
  return nullptr;
}

std::string EnvValue(const json& container, std::string_view name) {
  for (const json& e : container.at("env")) {
    if (e.at("name") == name) return e.contains("value") ? e.at("value").get<std::string>() : "";
  }
  return "<absent>";
}

TEST_CASE("one Job per vendor, on its own claim for that vendor's class", "[accept][jobs]") {
  const RenderedAcceptance r = RequireValue(RenderAcceptance(JobsRequest(), JobsConfig()));
  REQUIRE(r.jobs.size() == 2);
  CHECK(r.jobs[0].vendor == "nvidia");  // the class' order of preference
  CHECK(r.jobs[1].vendor == "huawei");
  // Claims first, then the Jobs: the order to apply.
  REQUIRE(r.objects.size() == 4);
  CHECK(r.objects[0].at("kind") == "ResourceClaimTemplate");
  CHECK(r.objects[1].at("kind") == "ResourceClaimTemplate");
  CHECK(r.objects[2].at("kind") == "Job");
  CHECK(r.objects[3].at("kind") == "Job");
  for (const RenderedJob& job : r.jobs) {
    INFO(job.vendor);
    const std::string name = "accept-training-large-memory-" + job.vendor;
    CHECK(job.name == name);
    CHECK(job.claim == "ResourceClaimTemplate " + name);
    CHECK(job.pods == 1);
    const json* tmpl = FindObject(r, "ResourceClaimTemplate", name);
    REQUIRE(tmpl != nullptr);
    const std::string other = job.vendor == "nvidia" ? "huawei" : "nvidia";
    const std::string claim_text = tmpl->dump();
    CHECK(claim_text.find(std::string(kClass) + "." + job.vendor) != std::string::npos);
    CHECK(claim_text.find(std::string(kClass) + "." + other) == std::string::npos);
    CHECK(tmpl->at("metadata").at("labels") ==
          json({{"app.kubernetes.io/managed-by", "xpuctl-accept"},
                {"xpu.dra.dev/accept-run", "render"}}));
    CHECK(tmpl->at("metadata").at("namespace") == "default");

    const json& j = job.job;
    CHECK(*FindObject(r, "Job", name) == j);
    CHECK(j.at("apiVersion") == "batch/v1");
    CHECK(j.at("metadata").at("labels").at("xpu.dra.dev/accept-vendor") == job.vendor);
    CHECK(j.at("spec").at("backoffLimit") == 0);
    CHECK_FALSE(j.at("spec").contains("parallelism"));
    const json& pod = j.at("spec").at("template").at("spec");
    CHECK(j.at("spec").at("template").at("metadata").at("labels") == j.at("metadata").at("labels"));
    CHECK(pod.at("restartPolicy") == "Never");
    CHECK_FALSE(pod.contains("hostNetwork"));
    CHECK(pod.at("resourceClaims") ==
          json::array({{{"name", "accelerators"}, {"resourceClaimTemplateName", name}}}));
    REQUIRE(pod.at("containers").size() == 1);
    const json& c = pod.at("containers")[0];
    CHECK(c.at("name") == "workload");
    CHECK(c.at("image") == job.image);
    CHECK(job.image == (job.vendor == "nvidia" ? "registry.example.com/acc/torch:cuda"
                                               : "registry.example.com/acc/torch:cann"));
    CHECK(c.at("command") == json({"python3", "-m", "xpu_acceptance"}));
    CHECK(c.at("args") ==
          json({"--stages",
                "environment,operators,convergence,performance,power,stability,collectives"}));
    CHECK(c.at("resources") == json({{"claims", {{{"name", "accelerators"}}}}}));
    CHECK(c.at("terminationMessagePolicy") == "FallbackToLogsOnError");
    CHECK(EnvValue(c, "XPU_ACCEPT_VENDOR") == job.vendor);
    CHECK(EnvValue(c, "XPU_ACCEPT_IMAGE") == job.image);
    CHECK(EnvValue(c, "XPU_ACCEPT_CLASS") == kClass);
    CHECK(json::parse(EnvValue(c, "XPU_ACCEPT_POLICY")) == DefaultPolicy().doc);
    CHECK(EnvValue(c, "XPU_ACCEPT_NODE").empty());  // from the downward API
    CHECK(c.at("env")[5] ==
          json({{"name", "XPU_ACCEPT_NODE"},
                {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}));
    CHECK(c.at("env")[6] ==
          json({{"name", "XPU_ACCEPT_POD"},
                {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}}));
    CHECK(EnvValue(c, "XPU_ACCEPT_MASTER_PORT") == (job.vendor == "nvidia" ? "29500" : "29501"));
  }
  // Render's flavors and legacy classes are left out, and a note says so.
  CHECK(FindObject(r, "ResourceFlavor", "xpu-nvidia") == nullptr);
  REQUIRE_FALSE(r.notes.empty());
  CHECK_THAT(r.notes.back(), Catch::Matchers::Contains("ResourceFlavors"));
}

TEST_CASE("the flags shape the Jobs: vendors, stages, count, names, policy, pod patch",
          "[accept][jobs]") {
  RenderRequest req = JobsRequest();
  req.vendors = {"nvidia"};
  req.stages = {"operators", "collectives"};
  req.count = 2;
  req.ns = "acc";
  req.name_prefix = "nightly";
  req.run_id = "run-7";
  req.kube_minor = 35;  // attributes mode: `count` devices, not a group device
  req.policy.doc["run"]["timeoutSeconds"] = 60;
  req.pod_patch = json::parse(
      R"({"tolerations": [{"operator": "Exists"}], "restartPolicy": null,
          "imagePullSecrets": [{"name": "regcred"}]})");
  const RenderedAcceptance r = RequireValue(RenderAcceptance(req, JobsConfig()));
  REQUIRE(r.jobs.size() == 1);
  CHECK(r.stages == std::vector<std::string>{"operators", "collectives"});
  const json& j = r.jobs[0].job;
  CHECK(j.at("metadata").at("name") == "nightly-nvidia");
  CHECK(j.at("metadata").at("namespace") == "acc");
  CHECK(j.at("metadata").at("labels").at("xpu.dra.dev/accept-run") == "run-7");
  const json& pod = j.at("spec").at("template").at("spec");
  CHECK(pod.at("tolerations") == json::parse(R"([{"operator": "Exists"}])"));
  CHECK(pod.at("imagePullSecrets") == json::parse(R"([{"name": "regcred"}])"));
  CHECK_FALSE(pod.contains("restartPolicy"));  // null deletes, as RFC 7386 says
  const json& c = pod.at("containers")[0];
  CHECK(c.at("args") == json({"--stages", "operators,collectives"}));
  CHECK(EnvValue(c, "XPU_ACCEPT_STAGES") == "operators,collectives");
  CHECK(json::parse(EnvValue(c, "XPU_ACCEPT_POLICY")).at("run").at("timeoutSeconds") == 60);
  const json* tmpl = FindObject(r, "ResourceClaimTemplate", "nightly-nvidia");
  REQUIRE(tmpl != nullptr);
  CHECK(tmpl->at("metadata").at("namespace") == "acc");
  const json& sub =
      tmpl->at("spec").at("spec").at("devices").at("requests")[0].at("firstAvailable")[0];
  CHECK(sub.at("count") == 2);
  CHECK(sub.at("deviceClassName") == "training-large-memory.nvidia");
}

TEST_CASE("the pod patch merges into the workload container by name (pod_patch.h)",
          "[accept][jobs]") {
  RenderRequest req = JobsRequest();
  req.vendors = {"huawei"};
  req.gang_nodes = 2;
  req.pod_patch = json::parse(R"({
    "containers": [{"name": "workload", "imagePullPolicy": "Never",
                    "env": [{"name": "XPU_ACCEPT_DEVICE", "value": "cpu"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
    "volumes": [{"name": "data", "hostPath": {"path": "/data"}}],
    "tolerations": [{"operator": "Exists"}]})");
  const RenderedAcceptance r = RequireValue(RenderAcceptance(req, JobsConfig()));
  REQUIRE(r.jobs.size() == 1);
  const json& pod = r.jobs[0].job.at("spec").at("template").at("spec");
  REQUIRE(pod.at("containers").size() == 1);
  const json& c = pod.at("containers")[0];
  CHECK(c.at("image") == "registry.example.com/acc/torch:cann");
  CHECK(c.at("imagePullPolicy") == "Never");
  CHECK(EnvValue(c, "XPU_ACCEPT_VENDOR") == "huawei");  // render's env stays
  CHECK(EnvValue(c, "XPU_ACCEPT_DEVICE") == "cpu");
  CHECK(c.at("volumeMounts") == json::parse(R"([{"name": "data", "mountPath": "/data"}])"));
  CHECK(c.at("resources").at("claims") == json::array({{{"name", "gang"}}, {{"name", "devices"}}}));
  CHECK(pod.at("resourceClaims").size() == 2);
  CHECK(pod.at("volumes").size() == 1);
  CHECK(pod.at("tolerations") == json::parse(R"([{"operator": "Exists"}])"));
  CHECK(pod.at("hostNetwork") == true);  // render's gang fields stay
}

TEST_CASE("render with --gang: an AcceleratorGang per vendor and an Indexed Job on its claims",
          "[accept][jobs]") {
  RenderRequest req = JobsRequest();
  req.vendors = {"huawei"};
  req.gang_nodes = 2;
  const RenderedAcceptance r = RequireValue(RenderAcceptance(req, JobsConfig()));
  REQUIRE(r.jobs.size() == 1);
  const std::string name = "accept-training-large-memory-huawei";
  CHECK(r.jobs[0].claim == "AcceleratorGang " + name);
  CHECK(r.jobs[0].pods == 2);
  const json* gang = FindObject(r, "AcceleratorGang", name);
  REQUIRE(gang != nullptr);
  CHECK(gang->at("apiVersion") == "xpu.dra.dev/v1alpha1");
  CHECK(gang->at("spec").at("nodes") == 2);
  CHECK(gang->at("spec").at("devicesPerNode") == 1);
  CHECK(gang->at("spec").at("deviceClassName") == "training-large-memory.huawei");
  CHECK(gang->at("metadata").at("labels").at("xpu.dra.dev/accept-run") == "render");
  const json& spec = r.jobs[0].job.at("spec");
  CHECK(spec.at("completionMode") == "Indexed");
  CHECK(spec.at("completions") == 2);
  CHECK(spec.at("parallelism") == 2);
  const json& pod = spec.at("template").at("spec");
  // docs/gangs.md: the gang's shared claim and a claim of its own from the member template.
  CHECK(pod.at("resourceClaims") ==
        json::array({{{"name", "gang"}, {"resourceClaimName", name + "-gang"}},
                     {{"name", "devices"}, {"resourceClaimTemplateName", name + "-member"}}}));
  CHECK(pod.at("containers")[0].at("resources").at("claims") ==
        json::array({{{"name", "gang"}}, {{"name", "devices"}}}));
  CHECK(pod.at("hostNetwork") == true);
  const json& anti =
      pod.at("affinity").at("podAntiAffinity").at("requiredDuringSchedulingIgnoredDuringExecution");
  CHECK(anti[0].at("topologyKey") == "kubernetes.io/hostname");
  CHECK(anti[0].at("labelSelector").at("matchLabels") ==
        spec.at("template").at("metadata").at("labels"));
}

TEST_CASE("accept render errors name the field", "[accept][jobs]") {
  const controller::Config config = JobsConfig();
  const auto error = [&](const RenderRequest& req) {
    const StatusOr<RenderedAcceptance> r = RenderAcceptance(req, config);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    return r.status().message();
  };
  RenderRequest req = JobsRequest();
  req.capability_class = "no-such-class";
  CHECK(error(req) ==
        "--class: unknown capability class \"no-such-class\"; the config has "
        "training-large-memory, open-class");
  req = JobsRequest();
  req.vendors = {"nvidia", "cambricon"};
  CHECK(error(req) ==
        "--vendors: \"cambricon\" is not allowed by class training-large-memory (allowed: "
        "nvidia, huawei)");
  req = JobsRequest();
  req.capability_class = "open-class";
  req.vendors = {"nvidia"};
  CHECK_THAT(error(req), Catch::Matchers::StartsWith(
                             "capabilityClasses[1].images.nvidia: class open-class has no image "
                             "for vendor nvidia"));
  req = JobsRequest();
  req.gang_nodes = 1;
  CHECK(error(req) == "--gang: expected at least 2 nodes, got 1");
  req = JobsRequest();
  req.name_prefix = "Upper";
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("--name: the Job name \"Upper-nvidia\""));
  req = JobsRequest();
  req.name_prefix = std::string(60, 'a');
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("--name: "));
  req = JobsRequest();
  req.run_id = "bad id";
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("--run-id"));
  req = JobsRequest();
  req.ns = "Not_A_Namespace";
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("--namespace"));
  req = JobsRequest();
  req.pod_patch = json::array();
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("--pod-patch: expected a mapping"));
  req.pod_patch =
      json::parse(R"({"resourceClaims": [{"name": "accelerators", "$patch": "delete"}]})");
  CHECK(error(req) ==
        "--pod-patch: resourceClaims: the patch removes claim \"accelerators\", which container "
        "\"workload\" uses");
  req.pod_patch = json::parse(R"({"containers": [{"name": "workload", "env": {}}]})");
  CHECK(error(req) == "--pod-patch: containers[0].env: expected a list, got {}");
  // A count no vendor's reference servers hold.
  req = JobsRequest();
  req.vendors = {"huawei"};
  req.count = 64;
  CHECK_THAT(error(req), Catch::Matchers::StartsWith("vendor huawei: --count: 64 devices"));
  // The class' own vendors: each is left out with a note, and none left is an error.
  req.vendors.clear();
  CHECK_THAT(error(req),
             Catch::Matchers::StartsWith("no vendor of class training-large-memory can be "
                                         "rendered: vendor nvidia: --count: 64 devices"));
}

TEST_CASE("a class open to any vendor runs those it has images for", "[accept][jobs]") {
  RenderRequest req = JobsRequest();
  req.capability_class = "open-class";
  const RenderedAcceptance r = RequireValue(RenderAcceptance(req, JobsConfig()));
  REQUIRE(r.jobs.size() == 1);
  CHECK(r.jobs[0].vendor == "huawei");
  CHECK(r.jobs[0].image == "h:1");
}

}  // namespace
}  // namespace xpu::accept
