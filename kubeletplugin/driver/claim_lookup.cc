#include "kubeletplugin/driver/claim_lookup.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace xpu::plugin {

StatusOr<ClaimLister::Page> ApiClaimLister::List(const std::string& ns,
                                                 const std::string& continue_token,
                                                 const Wanted& wanted) {
  api::client::ListOptions options;
  options.limit = limit_;
  options.continue_token = continue_token;
  ASSIGN_OR_RETURN(api::client::ListPage listed,
                   client_->List(api::client::ResourceClaims(), ns, options));
  Page page;
  page.continue_token = std::move(listed.continue_token);
  for (const nlohmann::json& item : listed.items) {
    const nlohmann::json* meta =
        item.is_object() && item.contains("metadata") ? &item.at("metadata") : nullptr;
    if (meta == nullptr || !meta->is_object()) continue;
    const auto name = meta->find("name");
    const auto item_ns = meta->find("namespace");
    if (name == meta->end() || !name->is_string() || item_ns == meta->end() ||
        !item_ns->is_string() || !wanted(item_ns->get<std::string>(), name->get<std::string>())) {
      continue;
    }
    StatusOr<api::resource::ResourceClaim> claim =
        api::FromJson<api::resource::ResourceClaim>(item);
    if (claim.ok()) page.claims.push_back(std::move(claim).value());
  }
  return page;
}

ListPlan PlanLists(const std::vector<const ClaimRef*>& todo) {
  std::map<std::string, size_t> count;
  for (const ClaimRef* ref : todo) ++count[ref->ns];
  ListPlan plan;
  plan.list_of.assign(todo.size(), -1);
  std::map<std::string, int> index;
  size_t left = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string& ns = todo[i]->ns;
    if (count[ns] < kListAtClaims) {
      ++left;
      continue;
    }
    auto [it, added] = index.try_emplace(ns, static_cast<int>(plan.lists.size()));
    if (added) plan.lists.push_back(ns);
    plan.list_of[i] = it->second;
  }
  if (left >= kListAtClaims) {
    const int all = static_cast<int>(plan.lists.size());
    plan.lists.emplace_back();
    for (size_t i = 0; i < todo.size(); ++i) {
      if (plan.list_of[i] < 0) plan.list_of[i] = all;
    }
  }
  return plan;
}

ListedClaims ListClaims(ClaimLister& lister, const std::string& ns,
                        const std::set<api::client::ObjectKey>& wanted, int max_pages,
                        const std::function<bool()>& go_on) {
  ListedClaims out;
  std::string token;
  const std::string where = ns.empty() ? "all namespaces" : ns;
  const auto is_wanted = [&wanted](const std::string& item_ns, const std::string& name) {
    return wanted.contains(api::client::ObjectKey::Namespaced(item_ns, name));
  };
  while (go_on()) {
    if (out.pages >= max_pages) {
      out.error =
          Status(StatusCode::kResourceExhausted,
                 "list resourceclaims in " + where + ": more than " + std::to_string(max_pages) +
                     " pages, more requests than a GET per claim would take");
      return out;
    }
    StatusOr<ClaimLister::Page> page = lister.List(ns, token, is_wanted);
    ++out.pages;
    if (!page.ok()) {
      out.error = page.status();
      return out;
    }
    for (api::resource::ResourceClaim& claim : page->claims) {
      api::client::ObjectKey key = api::client::ObjectKey::Of(claim.metadata);
      out.found.insert_or_assign(std::move(key), std::move(claim));
    }
    if (page->continue_token.empty()) {
      out.complete = true;
      return out;
    }
    token = std::move(page->continue_token);
  }
  return out;
}

}  // namespace xpu::plugin
