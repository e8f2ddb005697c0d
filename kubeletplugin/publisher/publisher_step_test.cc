// The publish loop's decisions, without a server or a clock.
#include <catch2/catch.hpp>

#include "kubeletplugin/publisher/publisher.h"

namespace xpu::plugin {
namespace {

using std::chrono::milliseconds;

TEST_CASE("after a publish attempt: wait the period, retry soon, or stop sending the same") {
  PublisherOptions o;
  o.rediscover = milliseconds(60'000);
  o.node_retry = milliseconds(2'000);
  struct Case {
    Status result;
    milliseconds wait;
    bool terminal;
  };
  const Case cases[] = {
      {OkStatus(), o.rediscover, false},
      // The Node is not visible yet (a DaemonSet pod can start first): soon again.
      {NotFoundError("node n1 does not exist (yet)"), o.node_retry, false},
      // Worth retrying: conflicts, throttling, server errors, no answer, our own errors.
      {Status(StatusCode::kAborted, "409 Conflict"), o.node_retry, false},
      {Status(StatusCode::kAlreadyExists, "409 AlreadyExists"), o.node_retry, false},
      {UnavailableError("429 Too Many Requests"), o.node_retry, false},
      {Status(StatusCode::kDeadlineExceeded, "timeout"), o.node_retry, false},
      {DataLossError("discover: bad sysfs"), o.node_retry, false},
      // Refused for itself: the period, and not sent again unchanged.
      {InvalidArgumentError("422 Invalid: status.devices[0].name"), o.rediscover, true},
      {Status(StatusCode::kPermissionDenied, "403 Forbidden"), o.rediscover, true},
      {Status(StatusCode::kUnauthenticated, "401 Unauthorized"), o.rediscover, true},
      {OutOfRangeError("410 Gone"), o.rediscover, true},
  };
  for (const Case& c : cases) {
    INFO(c.result.ToString());
    const PublishStep step = NextPublishStep(c.result, o);
    CHECK(step.wait == c.wait);
    CHECK(step.terminal == c.terminal);
  }
}

}  // namespace
}  // namespace xpu::plugin
