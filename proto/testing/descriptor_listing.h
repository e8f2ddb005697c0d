// DescriptorListing: the wire facts of compiled .proto files as normalised text, one fact a line,
// so that two sources of one protocol (our proto/ files as compiled into the generated code's
// DescriptorPool, and upstream's .proto files as protoc compiles them) can be compared line by
// line. For tests and scripts/kubelet-descriptors only.
//
// What a listing holds, per file: the package and syntax; every enum (values by number), message
// (fields by number: number, name, type, referenced type, label, packed, proto3 `optional`,
// oneof; reserved numbers and names; map entries marked) and service (methods by name: request
// and response types, client and server streaming). Names are full names, referenced types start
// with a dot. Files come in package order, declarations in full-name order, so the order of
// declarations in a .proto file, its file name, comments, imports and file options (go_package)
// never show: they are not on the wire.
//
// Stateless and thread-safe; the descriptors must outlive the call.
#ifndef XPU_PROTO_TESTING_DESCRIPTOR_LISTING_H_
#define XPU_PROTO_TESTING_DESCRIPTOR_LISTING_H_

#include <google/protobuf/descriptor.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::testing {

// The listing of `files`, sorted by package (then file name), concatenated.
std::string DescriptorListing(std::vector<const google::protobuf::FileDescriptor*> files);

// The listing of every file of a serialised google.protobuf.FileDescriptorSet (as
// `protoc --descriptor_set_out --include_imports` writes it), built into a pool of its own.
// InvalidArgument when the bytes do not parse or a file does not build (e.g. its imports are
// missing from the set); the message names the file.
StatusOr<std::string> ListDescriptorSet(std::string_view serialized);

// The fact lines of a listing: '#' comment lines and blank lines dropped, trailing blanks cut.
std::vector<std::string> ListingFacts(std::string_view listing);

}  // namespace xpu::testing

#endif  // XPU_PROTO_TESTING_DESCRIPTOR_LISTING_H_
