#include "proto/testing/descriptor_listing.h"

#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

#include "base/text.h"

namespace xpu::testing {

namespace {
namespace descriptor_listing_cc {

namespace pb = google::protobuf;

std::string LabelName(pb::FieldDescriptor::Label label) {
  switch (label) {
    case pb::FieldDescriptor::LABEL_OPTIONAL:
      return "optional";
    case pb::FieldDescriptor::LABEL_REQUIRED:
      return "required";
    case pb::FieldDescriptor::LABEL_REPEATED:
      return "repeated";
  }
  return "label-" + std::to_string(static_cast<int>(label));
}

std::string SyntaxName(const pb::FileDescriptor& file) {
  switch (file.syntax()) {
    case pb::FileDescriptor::SYNTAX_PROTO2:
      return "proto2";
    case pb::FileDescriptor::SYNTAX_PROTO3:
      return "proto3";
    default:
      return "unknown";
  }
}

// "field 5 share_id string optional proto3_optional"
std::string FieldLine(const pb::FieldDescriptor& field) {
  std::string line =
      "    field " + std::to_string(field.number()) + " " + field.name() + " " + field.type_name();
  if (field.message_type() != nullptr) line += " ." + field.message_type()->full_name();
  if (field.enum_type() != nullptr) line += " ." + field.enum_type()->full_name();
  line += " " + LabelName(field.label());
  if (field.is_packed()) line += " packed";
  if (field.has_optional_keyword()) line += " proto3_optional";
  if (field.real_containing_oneof() != nullptr) {
    line += " oneof " + field.real_containing_oneof()->name();
  }
  return line + "\n";
}

template <typename D>
std::string ReservedLines(const D& d) {
  std::string out;
  for (int i = 0; i < d.reserved_range_count(); ++i) {
    const auto* r = d.reserved_range(i);
    // Message ranges are end-exclusive, enum ranges end-inclusive: print both as inclusive.
    int last = r->end;
    if constexpr (std::is_same_v<D, pb::Descriptor>) last = r->end - 1;
    out += "    reserved " + std::to_string(r->start) + " to " + std::to_string(last) + "\n";
  }
  for (int i = 0; i < d.reserved_name_count(); ++i) {
    out += "    reserved name " + d.reserved_name(i) + "\n";
  }
  return out;
}

std::string MessageBlock(const pb::Descriptor& message) {
  std::string out = "  message " + message.full_name();
  if (message.options().map_entry()) out += " map_entry";
  out += "\n";
  std::map<int, std::string> fields;
  for (int i = 0; i < message.field_count(); ++i) {
    fields[message.field(i)->number()] = FieldLine(*message.field(i));
  }
  for (const auto& [number, line] : fields) out += line;
  return out + ReservedLines(message);
}

std::string EnumBlock(const pb::EnumDescriptor& e) {
  std::string out = "  enum " + e.full_name() + "\n";
  std::multimap<int, std::string> values;  // aliases share a number
  for (int i = 0; i < e.value_count(); ++i) {
    values.emplace(e.value(i)->number(), e.value(i)->name());
  }
  for (const auto& [number, name] : values) {
    out += "    value " + std::to_string(number) + " " + name + "\n";
  }
  return out + ReservedLines(e);
}

std::string ServiceBlock(const pb::ServiceDescriptor& service) {
  std::string out = "  service " + service.full_name() + "\n";
  std::map<std::string, std::string> methods;
  for (int i = 0; i < service.method_count(); ++i) {
    const pb::MethodDescriptor& m = *service.method(i);
    methods[m.name()] = "    rpc " + m.name() + " (" + (m.client_streaming() ? "stream " : "") +
                        "." + m.input_type()->full_name() + ") returns (" +
                        (m.server_streaming() ? "stream " : "") + "." +
                        m.output_type()->full_name() + ")\n";
  }
  for (const auto& [name, line] : methods) out += line;
  return out;
}

// Every message and enum of `message`, nested ones included, keyed by full name.
void CollectNested(const pb::Descriptor& message, std::map<std::string, std::string>& blocks) {
  blocks["message " + message.full_name()] = MessageBlock(message);
  for (int i = 0; i < message.enum_type_count(); ++i) {
    blocks["enum " + message.enum_type(i)->full_name()] = EnumBlock(*message.enum_type(i));
  }
  for (int i = 0; i < message.nested_type_count(); ++i) {
    CollectNested(*message.nested_type(i), blocks);
  }
}

std::string FileBlock(const pb::FileDescriptor& file) {
  std::string out = "package " + file.package() + " syntax " + SyntaxName(file) + "\n";
  // Enums first, then messages, then services; each kind in full-name order.
  std::map<std::string, std::string> types;
  for (int i = 0; i < file.enum_type_count(); ++i) {
    types["enum " + file.enum_type(i)->full_name()] = EnumBlock(*file.enum_type(i));
  }
  for (int i = 0; i < file.message_type_count(); ++i) CollectNested(*file.message_type(i), types);
  for (const auto& [key, block] : types) out += block;
  std::map<std::string, std::string> services;
  for (int i = 0; i < file.service_count(); ++i) {
    services[file.service(i)->full_name()] = ServiceBlock(*file.service(i));
  }
  for (const auto& [name, block] : services) out += block;
  return out;
}

// Keeps the pool's build errors for the Status (instead of libprotobuf's log).
class CollectErrors : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name,
                const pb::Message* /*descriptor*/, ErrorLocation /*location*/,
                const std::string& message) override {
    errors_ += (errors_.empty() ? "" : "; ") + filename + ": " + element_name + ": " + message;
  }
  const std::string& errors() const { return errors_; }

 private:
  std::string errors_;
};

}  // namespace descriptor_listing_cc
}  // namespace

std::string DescriptorListing(std::vector<const google::protobuf::FileDescriptor*> files) {
  std::sort(files.begin(), files.end(), [](const auto* a, const auto* b) {
    return std::make_pair(a->package(), a->name()) < std::make_pair(b->package(), b->name());
  });
  std::string out;
  for (const auto* file : files) out += descriptor_listing_cc::FileBlock(*file);
  return out;
}

StatusOr<std::string> ListDescriptorSet(std::string_view serialized) {
  namespace pb = google::protobuf;
  pb::FileDescriptorSet set;
  if (!set.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return InvalidArgumentError("parse FileDescriptorSet: not a serialised descriptor set (" +
                                std::to_string(serialized.size()) + " bytes)");
  }
  pb::DescriptorPool pool;
  std::vector<const pb::FileDescriptor*> files;
  for (const pb::FileDescriptorProto& proto : set.file()) {
    descriptor_listing_cc::CollectErrors errors;
    const pb::FileDescriptor* file = pool.BuildFileCollectingErrors(proto, &errors);
    if (file == nullptr) {
      return InvalidArgumentError("build descriptor of " + proto.name() + ": " + errors.errors());
    }
    files.push_back(file);
  }
  return DescriptorListing(std::move(files));
}

std::vector<std::string> ListingFacts(std::string_view listing) {
  std::vector<std::string> facts;
  while (!listing.empty()) {
    const size_t end = listing.find('\n');
    std::string_view line = listing.substr(0, end);
    listing = end == std::string_view::npos ? std::string_view() : listing.substr(end + 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    if (Trim(line).empty() || Trim(line).front() == '#') continue;
    facts.emplace_back(line);
  }
  return facts;
}

}  // namespace xpu::testing
