#pragma once
// A fresh directory under the temporary directory, removed with everything in it at the end
// (the spill tests' spill directories).
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <iterator>
#include <string>

namespace taskwire::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "taskwire-spill-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::size_t files() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path),
                                                  std::filesystem::directory_iterator()));
  }
};

}  // namespace taskwire::test
