// gen-discovery-goldens HOSTS_DIR OUT_DIR: writes OUT_DIR/<host>.json, the NodeInventory that
// discovery gives for every fixture host HOSTS_DIR/<host> without vendor libraries, node name
// = the host's directory name and a fixed condition time. discovery_test fails when the committed
// e2e/fixtures/hosts-expected/ files differ; review a regenerated file against hardware.md before
// committing it.
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/golden.h"

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << "usage: gen-discovery-goldens HOSTS_DIR OUT_DIR\n"
                 "Writes OUT_DIR/<host>.json, the inventory discovered from each fixture host\n"
                 "HOSTS_DIR/<host> (e2e/fixtures/hosts -> e2e/fixtures/hosts-expected).\n";
    return 0;
  }
  if (argc != 3) {
    std::cerr << "usage: gen-discovery-goldens HOSTS_DIR OUT_DIR\n";
    return 2;
  }
  const std::string hosts = argv[1];
  const std::string out = argv[2];
  int written = 0;
  for (const std::string& name : xpu::discovery::FixtureHosts(hosts)) {
    xpu::StatusOr<std::string> text =
        xpu::discovery::GoldenInventory(std::string(hosts).append("/").append(name), name);
    if (!text.ok()) {
      std::cerr << "gen-discovery-goldens: " << name << ": " << text.status().message() << "\n";
      return 1;
    }
    const std::string path = std::string(out).append("/").append(name).append(".json");
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << *text;
    if (!file) {
      std::cerr << "gen-discovery-goldens: write " << path << " failed\n";
      return 1;
    }
    ++written;
  }
  std::cout << "gen-discovery-goldens: wrote " << written << " files to " << out << "\n";
  return 0;
}
