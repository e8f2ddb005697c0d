#include "api/field_errors.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "api/validation.h"

namespace xpu::api::checks {
namespace {

TEST_CASE("field paths: Key quotes a map key, Index numbers a list item") {
  CHECK(Key("metadata.labels", "app") == "metadata.labels[\"app\"]");
  CHECK(Key("spec.devices[0].attributes", "a/b") == "spec.devices[0].attributes[\"a/b\"]");
  CHECK(Index("spec.devices", 3) == "spec.devices[3]");
  CHECK(Index(Index("spec.devices", 0) + ".taints", 12) == "spec.devices[0].taints[12]");
  CHECK(Over(3, 2));
  CHECK_FALSE(Over(2, 2));
}

TEST_CASE("Errors records each problem in the API server's form, in order") {
  Errors errs;
  CHECK(errs.empty());
  errs.Required("spec.driver");
  errs.Required("metadata.name", "name or generateName is required");
  errs.Invalid("spec.pool.generation", "Invalid value: -1: must be greater than or equal to 0");
  errs.Forbidden("metadata.namespace", "not allowed on this type");
  errs.TooMany("spec.devices", 129, 128);
  errs.TooLong("metadata.annotations", 300000, 262144);
  errs.Duplicate("spec.devices[1].name", "gpu-0");
  errs.NotSupported("spec.devices[0].taints[0].effect", "Evict", {"NoExecute", "NoSchedule"});
  CHECK_FALSE(errs.empty());
  struct Want {
    FieldErrorType type;
    std::string field;
    std::string detail;
  };
  const std::vector<Want> want = {
      {FieldErrorType::kRequired, "spec.driver", "Required value"},
      {FieldErrorType::kRequired, "metadata.name",
       "Required value: name or generateName is required"},
      {FieldErrorType::kInvalid, "spec.pool.generation",
       "Invalid value: -1: must be greater than or equal to 0"},
      {FieldErrorType::kForbidden, "metadata.namespace", "Forbidden: not allowed on this type"},
      {FieldErrorType::kTooMany, "spec.devices", "Too many: 129: must have at most 128 items"},
      {FieldErrorType::kTooLong, "metadata.annotations",
       "Too long: may not be more than 262144 bytes, got 300000"},
      {FieldErrorType::kDuplicate, "spec.devices[1].name", "Duplicate value: \"gpu-0\""},
      {FieldErrorType::kNotSupported, "spec.devices[0].taints[0].effect",
       "Unsupported value: \"Evict\": supported values: \"NoExecute\", \"NoSchedule\""},
  };
  const FieldErrors got = errs.Take();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(got[i].ToString());
    CHECK(got[i].type == want[i].type);
    CHECK(got[i].field == want[i].field);
    CHECK(got[i].detail == want[i].detail);
  }
  CHECK(errs.empty());
}

TEST_CASE("Errors: WithinLimit, RequiredValid, Check and CheckQuantity") {
  Errors errs;
  CHECK(errs.WithinLimit(std::vector<int>{1, 2}, 2, "spec.devices"));
  CHECK_FALSE(errs.WithinLimit(std::vector<int>{1, 2, 3}, 2, "spec.devices"));
  errs.RequiredValid("", ValidateDnsLabel, "spec.devices[0].name");
  errs.RequiredValid("gpu-0", ValidateDnsLabel, "spec.devices[1].name");  // valid: nothing
  CHECK(errs.Check(OkStatus(), "spec.devices[2].name"));
  CHECK_FALSE(
      errs.Check(ValidateDnsLabel("GPU_0", "spec.devices[3].name"), "spec.devices[3].name"));
  CHECK(CheckQuantity("4Gi", "spec.devices[0].capacity[\"memory\"].value", errs).has_value());
  CHECK_FALSE(CheckQuantity("", "spec.devices[1].capacity[\"memory\"].value", errs));
  CHECK_FALSE(CheckQuantity("4 GB", "spec.devices[2].capacity[\"memory\"].value", errs));
  const FieldErrors got = errs.Take();
  REQUIRE(got.size() == 5);
  CHECK(got[0].ToString() == "spec.devices: Too many: 3: must have at most 2 items");
  CHECK(got[1].ToString() == "spec.devices[0].name: Required value");
  // The field prefix of the validation.h message is not repeated in the detail.
  CHECK(got[2].field == "spec.devices[3].name");
  CHECK(got[2].detail.rfind("spec.devices[3].name", 0) == std::string::npos);
  CHECK(got[3].ToString() == "spec.devices[1].capacity[\"memory\"].value: Required value");
  CHECK(got[4].type == FieldErrorType::kInvalid);
  CHECK(got[4].field == "spec.devices[2].capacity[\"memory\"].value");
}

}  // namespace
}  // namespace xpu::api::checks
