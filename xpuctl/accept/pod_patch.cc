#include "xpuctl/accept/pod_patch.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"

namespace xpu::accept {
namespace {
namespace pod_patch_cc {

using nlohmann::json;

constexpr std::string_view kDirective = "$patch";

// A list merged by key: the field and its entries' key.
struct KeyedList {
  std::string_view field;
  std::string_view key;
};
constexpr std::array<KeyedList, 4> kPodLists = {{{"volumes", "name"},
                                                 {"imagePullSecrets", "name"},
                                                 {"resourceClaims", "name"},
                                                 {"hostAliases", "ip"}}};
constexpr std::array<KeyedList, 4> kContainerLists = {{{"env", "name"},
                                                       {"volumeMounts", "mountPath"},
                                                       {"volumeDevices", "devicePath"},
                                                       {"ports", "containerPort"}}};
constexpr std::array<std::string_view, 2> kContainerFields = {"containers", "initContainers"};

template <size_t N>
const KeyedList* FindList(const std::array<KeyedList, N>& lists, std::string_view field) {
  for (const KeyedList& list : lists) {
    if (list.field == field) return &list;
  }
  return nullptr;
}

// The spec's entry that a patch entry with key value `value` merges into, or end().
json::iterator FindEntry(json& list, std::string_view key, const json& value) {
  return std::find_if(list.begin(), list.end(), [&](const json& e) {
    return e.is_object() && e.contains(key) && e.at(std::string(key)) == value;
  });
}

enum class EntryMerge { kReplace, kContainer };

StatusOr<json> MergeContainer(json target, const json& patch, const std::string& path);

// `target` (a list, or null: none) with the patch's entries merged by `key`.
StatusOr<json> MergeByKey(json target, const json& patch, std::string_view key,
                          const std::string& path, EntryMerge how) {
  if (!patch.is_array()) {
    return InvalidArgumentError(path + ": expected a list, got " + Abbreviate(patch.dump(), 60));
  }
  if (!target.is_array()) target = json::array();
  const std::string key_text(key);
  for (size_t i = 0; i < patch.size(); ++i) {
    const json& entry = patch[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains(key_text) ||
        !(entry.at(key_text).is_string() || entry.at(key_text).is_number_integer())) {
      std::string message = at;
      message.append(": expected a mapping with a ").append(key_text).append(", got ");
      return InvalidArgumentError(message + Abbreviate(entry.dump(), 60));
    }
    const auto directive = entry.find(std::string(kDirective));
    if (directive != entry.end() && *directive != "delete") {
      return InvalidArgumentError(at + "." + std::string(kDirective) + ": expected delete, got " +
                                  Abbreviate(directive->dump(), 40));
    }
    const auto it = FindEntry(target, key, entry.at(key_text));
    if (directive != entry.end()) {
      if (it != target.end()) target.erase(it);
    } else if (it == target.end()) {
      target.push_back(entry);
    } else if (how == EntryMerge::kReplace) {
      *it = entry;
    } else {
      ASSIGN_OR_RETURN(json merged, MergeContainer(std::move(*it), entry, at));
      *it = std::move(merged);
    }
  }
  return target;
}

// A container with a patch container of the same name merged in: RFC 7386 but for the lists of
// kContainerLists, merged by key.
StatusOr<json> MergeContainer(json target, const json& patch, const std::string& path) {
  for (const auto& [field, value] : patch.items()) {
    if (field == "name") continue;
    const KeyedList* list = FindList(kContainerLists, field);
    if (list == nullptr || value.is_null()) {
      target.merge_patch(json{{field, value}});
      continue;
    }
    std::string at = path;
    at.append(".").append(field);
    ASSIGN_OR_RETURN(json merged, MergeByKey(target.value(field, json()), value, list->key, at,
                                             EntryMerge::kReplace));
    target[field] = std::move(merged);
  }
  return target;
}

// The patch's tolerations after the spec's, each one only once.
StatusOr<json> AppendTolerations(json target, const json& patch) {
  if (!patch.is_array()) {
    return InvalidArgumentError("tolerations: expected a list, got " +
                                Abbreviate(patch.dump(), 60));
  }
  if (!target.is_array()) target = json::array();
  for (const json& toleration : patch) {
    if (std::find(target.begin(), target.end(), toleration) == target.end()) {
      target.push_back(toleration);
    }
  }
  return target;
}

// A claim a container of the spec uses: its entry of the pod's resourceClaims (null: none).
struct ClaimUse {
  std::string field;  // containers or initContainers
  std::string container;
  std::string claim;
  json entry;
};

// The object's member `key`, or null.
const json& Member(const json& object, const std::string& key) {
  static const json kNone;
  if (!object.is_object()) return kNone;
  const auto it = object.find(key);
  return it == object.end() ? kNone : *it;
}

const json* FindNamed(const json& list, const std::string& name) {
  if (!list.is_array()) return nullptr;
  for (const json& e : list) {
    if (Member(e, "name") == name) return &e;
  }
  return nullptr;
}

std::vector<ClaimUse> ClaimUses(const json& spec) {
  std::vector<ClaimUse> uses;
  for (std::string_view field : kContainerFields) {
    const json& containers = Member(spec, std::string(field));
    if (!containers.is_array()) continue;
    for (const json& c : containers) {
      if (!Member(c, "name").is_string()) continue;
      const json& claims = Member(Member(c, "resources"), "claims");
      if (!claims.is_array()) continue;
      for (const json& use : claims) {
        if (!Member(use, "name").is_string()) continue;
        const std::string claim = use.at("name").get<std::string>();
        const json* entry = FindNamed(Member(spec, "resourceClaims"), claim);
        uses.push_back({std::string(field), c.at("name").get<std::string>(), claim,
                        entry != nullptr ? *entry : json()});
      }
    }
  }
  return uses;
}

// The claims the spec's containers used are still there, unchanged, and still used.
Status CheckClaimUses(const std::vector<ClaimUse>& uses, const json& spec) {
  for (const ClaimUse& use : uses) {
    const std::string what =
        "claim " + QuoteText(use.claim) + ", which container " + QuoteText(use.container) + " uses";
    const json* entry = FindNamed(Member(spec, "resourceClaims"), use.claim);
    if (!use.entry.is_null() && entry == nullptr) {
      return InvalidArgumentError("resourceClaims: the patch removes " + what);
    }
    if (!use.entry.is_null() && *entry != use.entry) {
      return InvalidArgumentError("resourceClaims: the patch replaces " + what + " (" +
                                  Abbreviate(use.entry.dump(), 80) + " became " +
                                  Abbreviate(entry->dump(), 80) + ")");
    }
    const json* container = FindNamed(Member(spec, use.field), use.container);
    if (container == nullptr) {
      return InvalidArgumentError(use.field + ": the patch removes container " +
                                  QuoteText(use.container) + ", which uses claim " +
                                  QuoteText(use.claim));
    }
    if (FindNamed(Member(Member(*container, "resources"), "claims"), use.claim) == nullptr) {
      return InvalidArgumentError(
          use.field + "[" + use.container +
          "].resources.claims: the patch removes the container's use of claim " +
          QuoteText(use.claim));
    }
  }
  return OkStatus();
}

// One field of the patch applied to the spec.
Status PatchField(json& spec, const std::string& field, const json& value) {
  if (value.is_null()) {
    spec.erase(field);
    return OkStatus();
  }
  json merged;
  if (std::find(kContainerFields.begin(), kContainerFields.end(), field) !=
      kContainerFields.end()) {
    ASSIGN_OR_RETURN(merged, MergeByKey(spec.value(field, json()), value, "name", field,
                                        EntryMerge::kContainer));
  } else if (const KeyedList* list = FindList(kPodLists, field); list != nullptr) {
    ASSIGN_OR_RETURN(merged, MergeByKey(spec.value(field, json()), value, list->key, field,
                                        EntryMerge::kReplace));
  } else if (field == "tolerations") {
    ASSIGN_OR_RETURN(merged, AppendTolerations(spec.value(field, json()), value));
  } else {
    spec.merge_patch(json{{field, value}});
    return OkStatus();
  }
  spec[field] = std::move(merged);
  return OkStatus();
}

}  // namespace pod_patch_cc
}  // namespace

StatusOr<nlohmann::json> PatchPodSpec(nlohmann::json spec, const nlohmann::json& patch) {
  using pod_patch_cc::json;
  if (!patch.is_object()) {
    return InvalidArgumentError("expected a mapping (a patch of the pod spec), got " +
                                Abbreviate(patch.dump(), 60));
  }
  if (!spec.is_object()) spec = json::object();
  const std::vector<pod_patch_cc::ClaimUse> uses = pod_patch_cc::ClaimUses(spec);
  for (const auto& [field, value] : patch.items()) {
    RETURN_IF_ERROR(pod_patch_cc::PatchField(spec, field, value));
  }
  RETURN_IF_ERROR(pod_patch_cc::CheckClaimUses(uses, spec));
  return spec;
}

}  // namespace xpu::accept
