// The Catch2 main of every test executable, compiled once (libxpu_catch_main) instead of once
// per test binary: it is the slowest file of a test build.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
