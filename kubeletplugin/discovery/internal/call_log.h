// A device probe's record of its failed library calls (NVML's and DCMI's per-device probes): each
// failure is appended to the device's error text, "; "-separated, and a failure that says the
// device is gone (NVML: the GPU is lost; DCMI: the device does not exist) is remembered, so that
// the probe stops asking. A template over the library's return-code type.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_CALL_LOG_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_CALL_LOG_H_

#include <string>
#include <string_view>

namespace xpu::discovery {

template <typename Rc>
class CallLog {
 public:
  // The text of a failed call, "<fn>: <rc> <name>" (NvmlCallError, DcmiCallError).
  using Describe = std::string (*)(std::string_view fn, Rc rc);

  // Appends to `*error`. `ok`: the library's success code; `gone`: its "device gone" code.
  CallLog(std::string* error, Rc ok, Rc gone, Describe describe)
      : error_(error), ok_(ok), gone_code_(gone), describe_(describe) {}

  // True when `rc` is success; otherwise appends describe(fn, rc) and returns false, and gone()
  // holds from then on when `rc` says the device is gone.
  bool Ok(std::string_view fn, Rc rc) {
    if (rc == ok_) return true;
    if (!error_->empty()) *error_ += "; ";
    *error_ += describe_(fn, rc);
    if (rc == gone_code_) gone_ = true;
    return false;
  }

  // Whether a call said the device is gone.
  bool gone() const { return gone_; }

 private:
  std::string* error_;
  Rc ok_;
  Rc gone_code_;
  Describe describe_;
  bool gone_ = false;
};

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_CALL_LOG_H_
