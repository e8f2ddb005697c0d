#include "controller/render_tiers.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <utility>

#include "api/partitions.h"
#include "base/enum_names.h"
#include "base/name_list.h"

namespace xpu::controller::render_internal {
namespace {

using topology::DeviceSet;

// The tier candidates, tightest first.
constexpr SetKey kTierKeys[] = {SetKey::kPcieSwitch, SetKey::kPcieRoot, SetKey::kNumaNode};

// In SetKey order.
constexpr std::string_view kNameSuffixes[] = {"any", "scaleup", "module", "switch", "root", "numa"};
static_assert(NamesCover(kNameSuffixes, SetKey::kNumaNode));

std::string_view NameSuffix(SetKey key) { return NameAt(kNameSuffixes, key).value_or("any"); }

// Whether some two of `devices` are connected faster than some other two: only there can a
// tier pick a better set than any set does.
bool BandwidthsDiffer(const topology::Node& node, DeviceSet devices) {
  const std::vector<int> ids = devices.Ids();
  int64_t low = topology::kNoPairs;
  int64_t high = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = i + 1; j < ids.size(); ++j) {
      const int64_t bw = node.PairBandwidth(ids[i], ids[j]);
      low = std::min(low, bw);
      high = std::max(high, bw);
    }
  }
  return high > low;
}

// How `key` splits `devices`: one mask per value (a device without a value is in none).
std::set<uint64_t> PartitionOf(const ServerView& view, DeviceSet devices, SetKey key) {
  std::map<std::string, DeviceSet> parts;
  const std::map<int, std::string>& values = view.keys[static_cast<size_t>(key)];
  for (int id : devices.Ids()) {
    if (auto it = values.find(id); it != values.end()) parts[it->second].Add(id);
  }
  std::set<uint64_t> out;
  for (const auto& [value, set] : parts) out.insert(set.mask());
  return out;
}

std::vector<std::string> NamesOf(const VendorVerdict& v, const std::vector<size_t>& views) {
  std::vector<std::string> names;
  for (size_t i : views) names.push_back(v.views[i].server->name);
  return names;
}

// A subrequest of a model group: the rule-keeping one (tier kNone) or a tier.
SubrequestRender Attribute(const VendorVerdict& v, const ModelGroup& group, bool positive,
                           SetKey tier, const std::vector<size_t>& views) {
  SubrequestRender s;
  s.vendor = v.vendor;
  s.count = v.count;
  s.singles = v.groups_mode;
  s.constraint = std::string(SetKeyAttribute(group.constraint));
  s.tier = std::string(SetKeyAttribute(tier));
  s.optional = tier != SetKey::kNone;
  if (positive) s.models.assign(group.models.begin(), group.models.end());
  s.servers = NamesOf(v, views);
  return s;
}

}  // namespace

std::vector<Tier> TiersOf(const VendorVerdict& verdict, const ModelGroup& group) {
  if (verdict.count < 2) return {};
  std::vector<DeviceSet> devices;
  std::vector<size_t> differing;  // positions into group.views
  for (size_t n = 0; n < group.views.size(); ++n) {
    const ServerView& view = verdict.views[group.views[n]];
    devices.push_back(DevicesOf(view, group.models));
    if (BandwidthsDiffer(view.node, devices.back())) differing.push_back(n);
  }
  if (differing.empty()) return {};
  // A candidate that splits the devices like a tighter one wherever bandwidths differ adds no
  // alternative: the tighter name stays.
  std::vector<SetKey> candidates;
  for (SetKey key : kTierKeys) {
    const bool same = std::any_of(candidates.begin(), candidates.end(), [&](SetKey tighter) {
      return std::all_of(differing.begin(), differing.end(), [&](size_t n) {
        const ServerView& view = verdict.views[group.views[n]];
        return PartitionOf(view, devices[n], key) == PartitionOf(view, devices[n], tighter);
      });
    });
    if (!same) candidates.push_back(key);
  }
  // From the loosest: a tier is listed when, on some server, its worst set beats the worst set
  // of the next looser alternative listed, and every set of it keeps the rules.
  std::vector<Tier> out;
  std::vector<SetKey> looser = {group.constraint};
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    const std::vector<SetKey> keys = {group.constraint, *it};
    Tier tier{*it, {}};
    bool keeps = true;
    bool better = false;
    for (size_t n = 0; n < group.views.size() && keeps; ++n) {
      const ServerView& view = verdict.views[group.views[n]];
      const SetsJudged inside = JudgeSets(view, devices[n], verdict.count, keys, true);
      keeps = inside.all_keep;
      if (!keeps || inside.sets == 0) continue;
      tier.views.push_back(group.views[n]);
      const SetsJudged outside = JudgeSets(view, devices[n], verdict.count, looser, true);
      better = better || inside.worst_mbps > outside.worst_mbps;
    }
    if (!keeps || !better) continue;
    out.insert(out.begin(), std::move(tier));
    looser = keys;
  }
  return out;
}

namespace {

// One alternative before naming: its models, rule-keeping constraint and tier (or a group
// device of the count), and the bottleneck bandwidth every set of it keeps (the worst, over the
// servers it leaves a set on).
struct Alternative {
  ModelGroup group;
  SetKey tier = SetKey::kNone;
  std::vector<size_t> views;
  int64_t worst_mbps = topology::kNoPairs;
  bool group_device = false;  // one group device of the count (groups mode)
  int sizes = 0;              // the job sizes the claims can ask of it (ServerSizes)
};

// How many job sizes the claims can ask of the alternative's models on its servers, together
// (ServableCounts). At equal bandwidth a job goes first where fewer sizes fit, so that the
// servers that alone hold the other sizes stay whole for them (in groups mode a single NPU on an
// Atlas 800 9000, which serves 1, 2, 4 or 8, before an A3, which also serves 16).
int ServerSizes(const VendorVerdict& v, const Alternative& a) {
  uint64_t servable = 0;
  for (size_t i : a.views) {
    const ServerView& view = v.views[i];
    servable |= ServableCounts(
        v, view, a.group.models.empty() ? view.admitted : DevicesOf(view, a.group.models));
  }
  return std::popcount(servable);
}

// The group device's alternatives: one per model of the servers with aligned groups (each with
// the slowest aligned group's bandwidth) when `by_model`, else one for all, without models.
std::vector<Alternative> GroupAlternatives(const VendorVerdict& v, bool by_model) {
  if (!v.group_device) return {};
  if (!by_model) {
    Alternative a;
    a.views = v.group_views;
    a.group_device = true;
    return {a};
  }
  std::map<std::string, Alternative> by;
  for (size_t i : v.group_views) {
    const ServerView& view = v.views[i];
    for (const std::string& model : view.models) {
      if (v.excluded.contains(model)) continue;
      const DeviceSet own = DevicesOf(view, {model});
      for (const DeviceSet& g : topology::AlignedGroups(view.node, v.count)) {
        if (!(g - own).empty()) continue;  // a group of this model's devices only
        Alternative& a = by[model];
        a.group.models = {model};
        a.group_device = true;
        if (std::find(a.views.begin(), a.views.end(), i) == a.views.end()) a.views.push_back(i);
        a.worst_mbps =
            std::min(a.worst_mbps, topology::Evaluate(view.node, own, g).bottleneck_mbps);
      }
    }
  }
  std::vector<Alternative> out;
  for (auto& [model, a] : by) out.push_back(std::move(a));
  return out;
}

int64_t WorstOf(const VendorVerdict& v, const ModelGroup& group, SetKey tier,
                const std::vector<size_t>& views) {
  int64_t worst = topology::kNoPairs;
  for (size_t i : views) {
    const ServerView& view = v.views[i];
    const SetsJudged judged =
        JudgeSets(view, DevicesOf(view, group.models), v.count, {group.constraint, tier}, true);
    if (judged.sets > 0) worst = std::min(worst, judged.worst_mbps);
  }
  return worst;
}

// The group's alternatives: its tiers (when `tiers`), then its rule-keeping one.
void AddAlternatives(const VendorVerdict& v, const ModelGroup& group, bool tiers,
                     std::vector<Alternative>& out) {
  for (const Tier& tier : tiers ? TiersOf(v, group) : std::vector<Tier>()) {
    out.push_back({group, tier.key, tier.views, WorstOf(v, group, tier.key, tier.views)});
  }
  out.push_back({group, SetKey::kNone, group.views, WorstOf(v, group, SetKey::kNone, group.views)});
}

// The group's models one by one, each on the servers where it has a set under the constraint.
std::vector<ModelGroup> SplitByModel(const VendorVerdict& v, const ModelGroup& group) {
  std::vector<ModelGroup> out;
  for (const std::string& model : group.models) {
    ModelGroup one{group.constraint, {model}, {}};
    for (size_t i : group.views) {
      const ServerView& view = v.views[i];
      if (JudgeSets(view, DevicesOf(view, {model}), v.count, {group.constraint}, false).sets > 0) {
        one.views.push_back(i);
      }
    }
    if (!one.views.empty()) out.push_back(std::move(one));
  }
  return out;
}

// With tiers, a vendor's models can differ in what their sets are worth (an NVSwitch board's
// any four beat a PCIe server's best four): every model gets its own alternatives, all of them
// are ordered by the bandwidth their sets keep, fastest first, so that the scheduler's score
// prefers the node whose free devices are the faster; at equal bandwidth (always, for one
// device) by the job sizes the claims can ask of their models (ServerSizes), fewest first.
// Neighbours that are the same alternative at the same bandwidth and sizes for different models
// merge back into one subrequest.
std::vector<Alternative> OrderedAlternatives(const VendorVerdict& v, bool tiers,
                                             bool by_bandwidth) {
  // The group device first: where its bandwidth ties an attribute alternative's, it stays ahead.
  std::vector<Alternative> out = GroupAlternatives(v, tiers && by_bandwidth);
  for (const ModelGroup& group : v.groups) {
    if (!tiers || !by_bandwidth || group.models.size() < 2) {
      AddAlternatives(v, group, tiers, out);
      continue;
    }
    for (const ModelGroup& one : SplitByModel(v, group)) AddAlternatives(v, one, tiers, out);
  }
  if (!tiers || !by_bandwidth) return out;
  for (Alternative& a : out) a.sizes = ServerSizes(v, a);
  // Fastest first; at equal bandwidth the group device ahead, then the servers that hold the
  // fewest job sizes.
  std::stable_sort(out.begin(), out.end(), [](const Alternative& a, const Alternative& b) {
    if (a.worst_mbps != b.worst_mbps) return a.worst_mbps > b.worst_mbps;
    if (a.group_device != b.group_device) return a.group_device;
    return a.sizes < b.sizes;
  });
  std::vector<Alternative> merged;
  for (Alternative& a : out) {
    if (!merged.empty() && merged.back().group_device == a.group_device &&
        merged.back().group.constraint == a.group.constraint && merged.back().tier == a.tier &&
        merged.back().worst_mbps == a.worst_mbps && merged.back().sizes == a.sizes) {
      Alternative& b = merged.back();
      b.group.models.insert(a.group.models.begin(), a.group.models.end());
      for (size_t i : a.views) {
        if (std::find(b.views.begin(), b.views.end(), i) == b.views.end()) b.views.push_back(i);
      }
      std::sort(b.views.begin(), b.views.end());
      b.worst_mbps = std::min(b.worst_mbps, a.worst_mbps);
      continue;
    }
    merged.push_back(std::move(a));
  }
  return merged;
}

// "<vendor>[-<constraint>][-<tier>|-any]": the constraint where it is not the vendor's first
// group's, the tier where the models have more than one alternative; a name already taken gets
// the first model's name too (DNS label characters only).
std::string NameOf(const VendorVerdict& v, const Alternative& a, bool several,
                   const std::set<std::string>& taken) {
  std::string name = v.vendor;
  if (!v.groups.empty() && a.group.constraint != v.groups.front().constraint) {
    name += "-" + std::string(NameSuffix(a.group.constraint));
  }
  if (several) name += "-" + std::string(NameSuffix(a.tier));
  if (!taken.contains(name)) return name;
  // The model as a DNS label part (api/partitions.h), cut short without a trailing '-'.
  std::string model = api::ProfileLabel(*a.group.models.begin()).substr(0, 20);
  while (!model.empty() && model.back() == '-') model.pop_back();
  const std::string base = model.empty() ? name : name + "-" + model;
  std::string candidate = base;
  for (int n = 2; taken.contains(candidate); ++n) candidate = base + "-" + std::to_string(n);
  return candidate;
}

}  // namespace

VendorRender BuildVendorRender(const VendorVerdict& verdict, bool tiers, bool by_bandwidth) {
  const VendorVerdict& v = verdict;
  VendorRender r;
  r.vendor = v.vendor;
  r.device_class = v.device_class;
  r.count = v.count;
  r.excluded_models.assign(v.excluded.begin(), v.excluded.end());
  std::set<std::string> served;
  for (const ModelGroup& group : v.groups) served.insert(group.models.begin(), group.models.end());
  bool group_only = false;  // a model only the group device serves
  for (size_t i : v.group_views) {
    for (const std::string& model : v.views[i].models) {
      group_only = group_only || (!served.contains(model) && !v.excluded.contains(model));
    }
  }
  const std::vector<Alternative> alternatives = OrderedAlternatives(v, tiers, by_bandwidth);
  // With more than one set of models, or models only the group device serves, each attribute
  // subrequest names its models: a model no server was judged for must not pass a constraint
  // that was not checked for it.
  std::set<std::set<std::string>> model_sets;
  std::set<std::string> in_attributes;  // models an attribute alternative serves
  size_t attribute_count = 0;
  for (const Alternative& a : alternatives) {
    if (!a.group.models.empty()) model_sets.insert(a.group.models);
    if (a.group_device) continue;
    ++attribute_count;
    in_attributes.insert(a.group.models.begin(), a.group.models.end());
  }
  const bool positive = model_sets.size() > 1 || group_only;
  // Whether a model set has more than one alternative: then each name carries its tier.
  std::map<std::set<std::string>, int> per_set;
  for (const Alternative& a : alternatives) {
    if (!a.group_device) ++per_set[a.group.models];
  }
  // One device keeps every rule, so a single device's last alternative names no model: a model
  // no reference server has still lands there, after the ones ordered before it.
  const Alternative* catch_all = nullptr;
  if (v.count == 1 && v.excluded.empty()) {
    for (const Alternative& a : alternatives) {
      if (!a.group_device) catch_all = &a;
    }
  }
  std::set<size_t> fits(v.group_views.begin(), v.group_views.end());
  std::set<std::string> taken;
  for (const Alternative& a : alternatives) {
    if (a.group_device) {
      SubrequestRender s;
      s.name = attribute_count == 0 && alternatives.size() == 1 ? v.vendor : v.vendor + "-group";
      for (int n = 2; taken.contains(s.name); ++n) {
        s.name = v.vendor + "-group-" + std::to_string(n);
      }
      s.vendor = v.vendor;
      s.count = 1;
      s.group_size = v.count;
      s.models.assign(a.group.models.begin(), a.group.models.end());
      s.servers = NamesOf(v, a.views);
      // A tier when every model it serves has an attribute alternative too.
      s.optional = attribute_count > 0 && !group_only &&
                   std::all_of(a.group.models.begin(), a.group.models.end(),
                               [&](const std::string& m) { return in_attributes.contains(m); });
      taken.insert(s.name);
      r.subrequests.push_back(std::move(s));
      continue;
    }
    SubrequestRender s = Attribute(v, a.group, positive && &a != catch_all, a.tier, a.views);
    s.name = NameOf(v, a, per_set[a.group.models] > 1 || a.tier != SetKey::kNone, taken);
    taken.insert(s.name);
    r.subrequests.push_back(std::move(s));
    fits.insert(a.views.begin(), a.views.end());
  }
  r.servers = NamesOf(v, std::vector<size_t>(fits.begin(), fits.end()));
  return r;
}

void LimitSubrequests(std::vector<VendorRender>& vendors, size_t max,
                      std::vector<std::string>& notes) {
  size_t total = 0;
  for (const VendorRender& v : vendors) total += v.subrequests.size();
  const std::string why = ": firstAvailable holds at most " + std::to_string(max) + " subrequests";

  // The tiers of the last vendors first; in each vendor from its end, so that its middle tiers
  // go before its tightest (its first subrequest).
  for (auto v = vendors.rbegin(); v != vendors.rend() && total > max; ++v) {
    std::vector<SubrequestRender>& subs = v->subrequests;
    for (size_t i = subs.size(); i-- > 0 && total > max;) {
      if (!subs[i].optional) continue;
      notes.push_back("dropped " + subs[i].name + why);
      subs.erase(subs.begin() + static_cast<std::ptrdiff_t>(i));
      --total;
    }
  }
  while (total > max && !vendors.empty()) {
    const VendorRender& last = vendors.back();
    std::vector<std::string> names;
    for (const SubrequestRender& s : last.subrequests) names.push_back(s.name);
    notes.push_back("dropped vendor " + last.vendor + " (" + JoinNames(names, ", ") + ")" + why);
    total -= names.size();
    vendors.pop_back();
  }
}

}  // namespace xpu::controller::render_internal
