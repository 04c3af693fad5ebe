#ifndef STREAMREG_CORE_BASE_PARALLEL_PARTS_H_
#define STREAMREG_CORE_BASE_PARALLEL_PARTS_H_

#include <cstddef>
#include <thread>
#include <vector>

namespace streamreg {

// Splitting a batch computation over a few threads, in fixed parts: part p
// of `parts` covers [n p / parts, n (p + 1) / parts), so which thread does
// what depends only on n and the number of parts (results reduced part by
// part in order are the same from run to run).

// Runs run_part(p) for p in [0, parts), parts >= 1: part 0 on the calling
// thread, the others each on a thread of its own; returns when all have
// finished. Parts beyond n are empty.
template <class RunPart>
void RunParts(std::size_t parts, const RunPart& run_part) {
  std::vector<std::jthread> workers;
  for (std::size_t part = 1; part < parts; ++part) {
    workers.emplace_back(run_part, part);
  }
  run_part(std::size_t{0});
}

// The first index of part `part` of [0, n) split into `parts`.
inline std::size_t PartBegin(std::size_t n, std::size_t parts,
                             std::size_t part) {
  return n * part / parts;
}

// Runs body(i) for i in [0, n) over `parts` threads (RunParts).
template <class Body>
void ParallelFor(std::size_t n, std::size_t parts, const Body& body) {
  RunParts(parts, [&](std::size_t part) {
    for (std::size_t i = PartBegin(n, parts, part),
                     end = PartBegin(n, parts, part + 1);
         i < end; ++i) {
      body(i);
    }
  });
}

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_PARALLEL_PARTS_H_
