// descriptor-listing SET: prints the listing (proto/testing/descriptor_listing.h) of a serialised
// FileDescriptorSet written by `protoc --descriptor_set_out --include_imports`. The generator of
// the committed upstream listings, run by scripts/kubelet-descriptors.
#include <iostream>
#include <string>

#include "base/atomic_file.h"
#include "proto/testing/descriptor_listing.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: descriptor-listing DESCRIPTOR_SET (from protoc --descriptor_set_out)\n";
    return 2;
  }
  const std::string path = argv[1];
  auto bytes = xpu::ReadWholeFile(path);
  if (!bytes.ok()) {
    std::cerr << "descriptor-listing: read " << path << ": " << bytes.status().message() << "\n";
    return 1;
  }
  auto listing = xpu::testing::ListDescriptorSet(*bytes);
  if (!listing.ok()) {
    std::cerr << "descriptor-listing: " << path << ": " << listing.status().message() << "\n";
    return 1;
  }
  std::cout << *listing;
  return 0;
}
