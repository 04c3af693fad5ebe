#ifndef STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_
#define STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_

#include <stdlib.h>

#include <string>

#include "gtest/gtest.h"

namespace streamreg {

// A new, empty directory under the test's temporary directory, made by
// mkdtemp(3) (whose template ends in six X's it replaces with a unique
// name). The test removes it.
inline std::string FreshDirectory() {
  std::string path = ::testing::TempDir() + "streamreg-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << path << " failed";
  }
  return path;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_FRESH_DIRECTORY_H_
