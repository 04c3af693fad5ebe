#include "tests/fuzz/fuzz_support.h"

// libFuzzer calls it once before the first input (fuzz_replay_main.cc
// too): the targets' code logs every refusal, which would slow the fuzzer
// down and bury its report.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  streamreg::SilenceLogs();
  return 0;
}
