#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"
#include "kubeletplugin/cdihook/container_root.h"
#include "kubeletplugin/cdihook/hook_args.h"
#include "kubeletplugin/cdihook/in_root.h"
#include "kubeletplugin/cdihook/ldcache.h"
#include "kubeletplugin/cdihook/musl_path.h"

namespace xpu::cdihook {
namespace {

namespace fs = std::filesystem;
using xpu::testing::ReadText;
using xpu::testing::WriteText;

std::string Message(const std::vector<std::string>& args) {
  return ParseHookArgs(args).status().message();
}

TEST_CASE("hook args: folders, links and ldconfig") {
  StatusOr<HookArgs> a =
      ParseHookArgs({"ldcache", "--folder", "/usr/lib/x86_64-linux-gnu", "--link",
                     "libcuda.so.570.158.01::/usr/lib/x86_64-linux-gnu/libcuda.so.1", "--ldconfig",
                     "/usr/sbin/ldconfig"});
  REQUIRE_OK(a);
  CHECK(a->folders == std::vector<std::string>{"/usr/lib/x86_64-linux-gnu"});
  REQUIRE(a->links.size() == 1);
  CHECK(a->links[0] == Link{"libcuda.so.570.158.01", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"});
  CHECK(a->ldconfig == "/usr/sbin/ldconfig");
  CHECK(ParseHookArgs({"ldcache"})->ldconfig == "/sbin/ldconfig");
}

TEST_CASE("hook args: what could lead outside the container is refused, naming the argument") {
  CHECK(Message({}) == "no command (xpu-cdi-hook ldcache ...)");
  CHECK(Message({"rm"}) == "unknown command \"rm\" (ldcache)");
  CHECK(Message({"ldcache", "--force"}).starts_with("unknown argument \"--force\""));
  CHECK(Message({"ldcache", "--folder"}) == "--folder: needs a value");
  CHECK(Message({"ldcache", "--folder", "usr/lib"}) ==
        "--folder: \"usr/lib\" is not an absolute path");
  CHECK(Message({"ldcache", "--folder", "/usr/../../etc"}).find("not a clean path") !=
        std::string::npos);
  CHECK(Message({"ldcache", "--folder", "/usr//lib"}).find("not a clean path") !=
        std::string::npos);
  CHECK(Message({"ldcache", "--folder", "/usr/lib\n/etc"}).find("newline") != std::string::npos);
  CHECK(Message({"ldcache", "--folder", "/"}) == "--folder: the root itself");
  CHECK(Message({"ldcache", "--link", "libx.so"}) == "--link: \"libx.so\" is not TARGET::LINK");
  CHECK(Message({"ldcache", "--link", "../../etc/shadow::/usr/lib/x"}) ==
        "--link target: \"../../etc/shadow\" is not a plain file name");
  CHECK(Message({"ldcache", "--link", "libx.so.1::relative/x"}).find("not an absolute") !=
        std::string::npos);
}

TEST_CASE("container root: from the bundle's config.json, relative or absolute, or crun's") {
  std::map<std::string, std::string> files = {
      {"/run/b1/config.json", R"({"ociVersion":"1.2.0","root":{"path":"rootfs"}})"},
      {"/run/b2/config.json", R"({"root":{"path":"/var/lib/c/rootfs","readonly":true}})"},
      {"/run/b3/config.json", R"({"process":{}})"},
      {"/run/b4/config.json", "not json"}};
  const ReadFn read = [&](const std::string& p) -> StatusOr<std::string> {
    const auto it = files.find(p);
    if (it == files.end()) return NotFoundError("read " + p + ": No such file or directory");
    return it->second;
  };
  CHECK(*ContainerRootPath(R"({"id":"c","status":"creating","bundle":"/run/b1"})", read) ==
        "/run/b1/rootfs");
  CHECK(*ContainerRootPath(R"({"bundle":"/run/b2"})", read) == "/var/lib/c/rootfs");
  CHECK(*ContainerRootPath(R"({"bundle":"/run/b1","root":"/crun/root"})", read) == "/crun/root");
  CHECK(ContainerRootPath("", read).status().message() ==
        "the container state on stdin is not a JSON object");
  CHECK(ContainerRootPath(R"({"id":"c"})", read).status().message() ==
        "the container state names no absolute bundle path");
  CHECK(ContainerRootPath(R"({"bundle":"/run/b3"})", read).status().message() ==
        "/run/b3/config.json: no root.path");
  CHECK(ContainerRootPath(R"({"bundle":"/run/b4"})", read).status().message() ==
        "/run/b4/config.json is not a JSON object");
  CHECK(ContainerRootPath(R"({"bundle":"/run/none"})", read)
            .status()
            .message()
            .find("read /run/none/config.json") == 0);
}

TEST_CASE("root dir: the host's / and a missing root are refused") {
  CHECK(RootDir::Open("/").status().message().find("is the host's /: refused") !=
        std::string::npos);
  CHECK(RootDir::Open("/no/such/container/root").status().code() == StatusCode::kNotFound);
}

TEST_CASE("root dir: links and files stay inside the tree, whatever its links say") {
  testing::TempDir outside;
  testing::TempDir tree;
  const std::string& root = tree.path();
  fs::create_directories(root + "/usr/lib");
  // An image whose folders point outside: absolutely, and by climbing.
  fs::create_symlink(outside.path(), root + "/evil");
  fs::create_symlink("../../../../../../../../" + outside.path(), root + "/climb");
  fs::create_directories(root + "/etc");
  fs::create_symlink(outside.path() + "/stolen", root + "/etc/ld.so.conf");
  StatusOr<RootDir> dir = RootDir::Open(root);
  REQUIRE_OK(dir);

  REQUIRE_OK(dir->Symlink("libx.so.1.2", "/usr/lib/libx.so.1"));
  CHECK(fs::read_symlink(root + "/usr/lib/libx.so.1") == "libx.so.1.2");
  REQUIRE_OK(dir->Symlink("libx.so.1.2", "/usr/lib/libx.so.1"));  // equal: left as it is
  WriteText(root + "/usr/lib/libx.so", "an image's stub");
  REQUIRE_OK(dir->Symlink("libx.so.1", "/usr/lib/libx.so"));  // a file: replaced
  CHECK(fs::is_symlink(root + "/usr/lib/libx.so"));
  fs::create_directories(root + "/usr/lib/libdir.so.1");
  CHECK(dir->Symlink("libx.so.1", "/usr/lib/libdir.so.1").message().find("a folder is there") !=
        std::string::npos);

  // Through the links: resolved inside the tree, where the targets do not exist.
  CHECK_FALSE(dir->Symlink("libx.so.1", "/evil/libx.so.1").ok());
  CHECK_FALSE(dir->WriteFile("/climb/owned", "x", 0644).ok());
  CHECK_FALSE(dir->MakeFolders("/evil/lib").ok());  // /evil leads nowhere inside the tree
  // The last component is never followed.
  CHECK_FALSE(dir->WriteFile("/etc/ld.so.conf", "include x\n", 0644).ok());
  CHECK(fs::is_empty(outside.path()));
}

TEST_CASE("ldcache: links, the folders' conf file, a missing ld.so.conf, then ldconfig -r") {
  testing::TempDir tree;
  fs::create_directories(tree.path() + "/usr/lib/x86_64-linux-gnu");
  StatusOr<RootDir> dir = RootDir::Open(tree.path());
  REQUIRE_OK(dir);
  StatusOr<HookArgs> args =
      ParseHookArgs({"ldcache", "--folder", "/usr/lib/x86_64-linux-gnu", "--folder",
                     "/usr/local/Ascend/driver/lib64/driver", "--link",
                     "libcuda.so.570.158.01::/usr/lib/x86_64-linux-gnu/libcuda.so.1", "--link",
                     "libnew.so.1::/opt/new/lib/libnew.so", "--ldconfig", "/no/such/ldconfig"});
  REQUIRE_OK(args);
  std::vector<std::string> ran;
  REQUIRE_OK(RunLdcache(*args, *dir, [&](const std::vector<std::string>& argv) {
    ran = argv;
    return OkStatus();
  }));
  CHECK(ran == std::vector<std::string>{"/no/such/ldconfig", "-X", "-r", dir->path()});
  CHECK(fs::read_symlink(tree.path() + "/usr/lib/x86_64-linux-gnu/libcuda.so.1") ==
        "libcuda.so.570.158.01");
  CHECK(fs::is_symlink(tree.path() + "/opt/new/lib/libnew.so"));  // its folder made with it
  const std::string conf = ReadText(tree.path() + std::string(kConfFile));
  CHECK(conf.find("\n/usr/lib/x86_64-linux-gnu\n/usr/local/Ascend/driver/lib64/driver\n") !=
        std::string::npos);
  CHECK(ReadText(tree.path() + "/etc/ld.so.conf") == "include /etc/ld.so.conf.d/*.conf\n");
  struct stat st {};
  REQUIRE(::stat((tree.path() + std::string(kConfFile)).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);

  // A failing ldconfig fails the hook with its output.
  CHECK(RunProgram({"/bin/sh", "-c", "echo broken cache >&2; exit 3"}).message() ==
        "/bin/sh: exit 3: broken cache");
  CHECK(RunProgram({"/no/such/program"}).message() == "/no/such/program: exit 127");
}

TEST_CASE("musl path: the image's list first, the driver's folders after it, once") {
  const std::vector<std::string> folders = {"/usr/lib", "/usr/local/Ascend/driver/lib64"};
  // No path file: musl's default, which the file replaces, is kept in front.
  CHECK(MuslPathContent(std::nullopt, folders) ==
        "/lib\n/usr/local/lib\n/usr/lib\n/usr/local/Ascend/driver/lib64\n");
  // The image's own, colon-separated and without a final newline.
  const std::string mine = "/opt/app/lib:/usr/lib";
  const std::string added = MuslPathContent(mine, folders);
  CHECK(added == "/opt/app/lib:/usr/lib\n/usr/local/Ascend/driver/lib64\n");
  CHECK(MuslPathContent(added, folders) == added);  // a second run adds nothing
  CHECK(MuslPathFile("aarch64") == "/etc/ld-musl-aarch64.path");
}

TEST_CASE("musl path: written only in an image with a musl loader, and read inside the tree") {
  testing::TempDir tree;
  StatusOr<RootDir> dir = RootDir::Open(tree.path());
  REQUIRE_OK(dir);
  const std::string path_file = tree.path() + MuslPathFile("x86_64");
  // A glibc image (no musl loader): nothing written.
  REQUIRE_OK(AddMuslPaths({"/opt/vendor/lib"}, *dir, "x86_64"));
  CHECK_FALSE(fs::exists(path_file));

  fs::create_directories(tree.path() + "/lib");
  WriteText(tree.path() + MuslLoader("x86_64"), "loader");
  REQUIRE_OK(AddMuslPaths({"/opt/vendor/lib"}, *dir, "x86_64"));
  CHECK(ReadText(path_file) == "/lib\n/usr/local/lib\n/usr/lib\n/opt/vendor/lib\n");
  struct stat st {};
  REQUIRE(::stat(path_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);

  // A path file that is a link leading out of the tree is read inside it: the host's file is
  // neither read nor written, and the link is refused.
  testing::TempDir host;
  WriteText(host.path() + "/outside.path", "/host/lib\n");
  fs::remove(path_file);
  fs::create_symlink(host.path() + "/outside.path", path_file);
  CHECK_FALSE(AddMuslPaths({"/opt/vendor/lib"}, *dir, "x86_64").ok());
  CHECK(ReadText(host.path() + "/outside.path") == "/host/lib\n");
  StatusOr<std::string> read = dir->ReadFile("/etc/ld-musl-x86_64.path", 1024);
  CHECK(read.status().code() == StatusCode::kNotFound);
}

// A musl program in a musl root loads a library by soname from a driver folder once the hook has
// run, and not before: the real musl loader (Debian's musl-tools) reads the path file.
TEST_CASE("xpu-cdi-hook: a musl image finds a driver library by name through its path file") {
  if (::geteuid() != 0) XPU_SKIP("chroot and ldconfig -r need root");
  const std::string loader = MuslLoader(MuslArch());  // the host's, from Debian's musl
  if (::access("/usr/bin/musl-gcc", X_OK) != 0 || !fs::exists(loader)) {
    XPU_SKIP("musl-gcc is not installed (scripts/install-deps installs musl-tools)");
  }
  testing::TempDir work;
  const std::string root = work.path() + "/rootfs";
  fs::create_directories(root + "/lib");
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/opt/vendor/lib");
  fs::copy_file(fs::canonical(loader), root + MuslLoader(MuslArch()));
  WriteText(work.path() + "/lib.c", "int xpu_vendor_answer(void) { return 42; }\n");
  WriteText(work.path() + "/prog.c",
            "#include <dlfcn.h>\n#include <stdio.h>\n"
            "int main(void) {\n"
            "  void* h = dlopen(\"libxpuvendor.so.1\", RTLD_NOW);\n"
            "  if (!h) { puts(dlerror()); return 1; }\n"
            "  int (*f)(void) = (int (*)(void))dlsym(h, \"xpu_vendor_answer\");\n"
            "  return f && f() == 42 ? 0 : 2;\n}\n");
  const std::string& w = work.path();
  REQUIRE(std::system(("musl-gcc -shared -fPIC -Wl,-soname,libxpuvendor.so.1 -o " + root +
                       "/opt/vendor/lib/libxpuvendor.so.1.2.3 " + w + "/lib.c && musl-gcc -o " +
                       root + "/bin/prog " + w + "/prog.c")
                          .c_str()) == 0);
  const std::string run = "chroot " + root + " /bin/prog >" + w + "/out 2>&1";
  CHECK(std::system(run.c_str()) != 0);  // not found by name without the hook

  WriteText(w + "/config.json", R"({"root":{"path":"rootfs"}})");
  WriteText(w + "/state.json", R"({"status":"creating","bundle":")" + w + R"("})");
  const std::string hook = std::string(XPU_CDI_HOOK_BINARY) +
                           " ldcache --folder /opt/vendor/lib --link "
                           "libxpuvendor.so.1.2.3::/opt/vendor/lib/libxpuvendor.so.1 <" +
                           w + "/state.json 2>" + w + "/err";
  INFO(ReadText(w + "/err"));
  REQUIRE(std::system(hook.c_str()) == 0);
  CHECK(ReadText(root + MuslPathFile(MuslArch())).find("\n/opt/vendor/lib\n") != std::string::npos);
  INFO(ReadText(w + "/out"));
  CHECK(std::system(run.c_str()) == 0);
}

// The real binary under the real ldconfig, as runc runs it: state on stdin, the bundle's
// config.json naming the root. ldconfig -r chroots, which needs root (the test tiers run as root).
TEST_CASE("xpu-cdi-hook: a library in a folder of its own is found by name through the cache") {
  if (::geteuid() != 0) FAIL("ldconfig -r needs root to chroot");
  testing::TempDir bundle;
  const std::string root = bundle.path() + "/rootfs";
  fs::create_directories(root + "/opt/vendor/lib");
  // A real shared library of this machine, as a vendor's library with its version in its name.
  const std::string libz = fs::canonical("/lib/x86_64-linux-gnu/libz.so.1").string();
  fs::copy_file(libz, root + "/opt/vendor/lib/libz.so.1.2.99");
  WriteText(bundle.path() + "/config.json", R"({"root":{"path":"rootfs"}})");
  std::ofstream(bundle.path() + "/state.json")
      << R"({"status":"creating","bundle":")" << bundle.path() << R"("})";
  const std::string cmd = std::string(XPU_CDI_HOOK_BINARY) +
                          " ldcache --folder /opt/vendor/lib --link "
                          "libz.so.1.2.99::/opt/vendor/lib/libz.so.1 <" +
                          bundle.path() + "/state.json 2>" + bundle.path() + "/err";
  INFO(ReadText(bundle.path() + "/err"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  REQUIRE(fs::exists(root + "/etc/ld.so.cache"));
  const std::string listing = bundle.path() + "/listing";
  REQUIRE(std::system(("/sbin/ldconfig -p -C " + root + "/etc/ld.so.cache >" + listing).c_str()) ==
          0);
  CHECK(ReadText(listing).find("libz.so.1 (libc6,x86-64) => /opt/vendor/lib/libz.so.1") !=
        std::string::npos);

  // A state naming no bundle: refused, nothing written.
  const std::string bad = std::string(XPU_CDI_HOOK_BINARY) +
                          " ldcache --folder /opt/vendor/lib </dev/null 2>" + bundle.path() +
                          "/err2";
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(ReadText(bundle.path() + "/err2").find("not a JSON object") != std::string::npos);
}

}  // namespace
}  // namespace xpu::cdihook
