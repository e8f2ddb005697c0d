// Private to xpu::api: the meta/v1 codecs that the resource codecs embed.
#ifndef XPU_API_INTERNAL_META_CODEC_H_
#define XPU_API_INTERNAL_META_CODEC_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/internal/codec.h"
#include "api/meta.h"
#include "base/status.h"

namespace xpu::api {

Status Read(const internal::Field& f, ObjectMeta* out);
nlohmann::json Write(const ObjectMeta& meta);

namespace internal {

// Takes apiVersion and kind of a top-level object: each must be absent or equal to the given one.
Status CheckTypeMeta(ObjectReader& reader, std::string_view api_version, std::string_view kind);

// Reads a whole top-level object with `Read(Field, T*)`, the root path being empty.
template <typename T>
StatusOr<T> ReadRoot(const nlohmann::json& json) {
  T out;
  RETURN_IF_ERROR(Read(Field{&json, ""}, &out));
  return out;
}

}  // namespace internal
}  // namespace xpu::api

#endif  // XPU_API_INTERNAL_META_CODEC_H_
