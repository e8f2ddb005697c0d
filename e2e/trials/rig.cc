#include "e2e/trials/rig.h"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace xpu::e2e::trials {

StatusOr<std::string> CreateNode(api::client::Client& client, const std::string& name) {
  const nlohmann::json object = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}}};
  ASSIGN_OR_RETURN(nlohmann::json created, client.Create(api::client::Nodes(), "", object));
  return created["metadata"].value("uid", "");
}

Restarts::Restarts(const KillPlan& plan, TrialStats* stats, std::mt19937_64* rng,
                   std::chrono::milliseconds startup_window)
    : plan_(plan),
      stats_(stats),
      rng_(rng),
      startup_delay_(0, startup_window.count()),
      in_recovery_(plan.recovery_kill_share) {}

StatusOr<Clock::time_point> Restarts::AfterKill(Clock::time_point killed,
                                                const std::function<Status()>& restart,
                                                const std::function<void()>& kill) {
  ++stats_->kills;
  RETURN_IF_ERROR(restart());
  if (!done() && in_recovery_(*rng_)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(startup_delay_(*rng_)));
    kill();
    killed = Clock::now();
    ++stats_->kills;
    ++stats_->kills_in_recovery;
    RETURN_IF_ERROR(restart());
  }
  return killed;
}

void Restarts::Progress(Clock::time_point start) {
  const int every = std::max(10, plan_.kills / 10);
  if (stats_->kills / every <= reported_) return;
  reported_ = stats_->kills / every;
  std::fprintf(stderr, "%s: %d/%d kills, %.0f s\n", stats_->part.c_str(), stats_->kills,
               plan_.kills, MsSince(start) / 1000);
}

std::string Tail(const std::string& text, size_t lines) {
  size_t at = text.size();
  for (size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos ? text : text.substr(at + 1);
}

}  // namespace xpu::e2e::trials
