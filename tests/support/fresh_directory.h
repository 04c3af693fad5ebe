#ifndef STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_
#define STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_

#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {

// The directories FreshDirectory made, removed with everything in them —
// and the server log a test keeps beside one (<directory>.log,
// server_process.h) — when the test program exits (a test may remove its
// own earlier); kept if STREAMREG_KEEP_TEST_DIRECTORIES is set, to look
// into after a run.
class FreshDirectories {
 public:
  static FreshDirectories& Instance() {
    static FreshDirectories made;
    return made;
  }
  void Add(std::string path) {
    std::lock_guard lock(mutex_);
    paths_.push_back(std::move(path));
  }
  ~FreshDirectories() {
    if (getenv("STREAMREG_KEEP_TEST_DIRECTORIES") != nullptr) return;
    for (const std::string& path : paths_) {
      std::error_code ignored;  // already gone, or never made
      std::filesystem::remove_all(path, ignored);
      std::filesystem::remove(path + ".log", ignored);
    }
  }

 private:
  FreshDirectories() = default;
  std::mutex mutex_;
  std::vector<std::string> paths_;
};

// A new, empty directory under the test's temporary directory, made by
// mkdtemp(3) (whose template ends in six X's it replaces with a unique
// name); removed when the test program exits (FreshDirectories).
inline std::string FreshDirectory() {
  std::string path = ::testing::TempDir() + "streamreg-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << path << " failed";
    return path;
  }
  FreshDirectories::Instance().Add(path);
  return path;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_
