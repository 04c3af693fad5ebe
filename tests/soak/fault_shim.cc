// The fault shim: a library the soak preloads (LD_PRELOAD) into
// streamreg-server to give it a slow disk, a full disk and a wall clock that
// jumps, switched on and off from outside through a FaultControl the two
// processes share (fault_control.h). It wraps the C library's fsync,
// fdatasync, write, clock_gettime, gettimeofday and time; with no control
// file named in the environment every call goes straight through.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/soak/fault_control.h"

namespace streamreg {
namespace {

FaultControl* control = nullptr;
std::string* data_dir_prefix = nullptr;  // "<data dir>/"

// The next definition of `name` after this library's (the C library's).
template <class Function>
Function* Next(const char* name) {
  return reinterpret_cast<Function*>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void MapControl() {
  const char* path = std::getenv(kFaultControlVariable);
  const char* data_dir = std::getenv(kFaultDataDirVariable);
  if (path == nullptr || data_dir == nullptr) return;
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  void* mapped = mmap(nullptr, sizeof(FaultControl), PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED) return;
  data_dir_prefix = new std::string(std::string(data_dir) + "/");
  control = static_cast<FaultControl*>(mapped);
}

// Whether `fd` is a file under the data directory.
bool UnderDataDir(int fd) {
  char link[64];
  char target[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target);
  if (n <= 0) return false;
  return static_cast<std::size_t>(n) >= data_dir_prefix->size() &&
         std::memcmp(target, data_dir_prefix->data(),
                     data_dir_prefix->size()) == 0;
}

// An fsync or fdatasync through `next`, slowed and counted.
int SlowCountedSync(int (*next)(int), int fd) {
  if (control == nullptr) return next(fd);
  const std::int64_t delay = control->fsync_delay_us.load();
  if (delay > 0) usleep(static_cast<useconds_t>(delay));
  const int result = next(fd);
  if (result == 0) ++control->syncs;
  return result;
}

std::int64_t RealtimeOffsetNs() {
  return control == nullptr ? 0 : control->realtime_offset_ns.load();
}

// Takes up to `wanted` bytes of the free space: what may be written, or -1
// for no limit.
std::int64_t TakeFreeBytes(std::int64_t wanted) {
  std::int64_t free = control->free_bytes.load();
  while (free >= 0) {
    const std::int64_t taken = std::min(free, wanted);
    if (control->free_bytes.compare_exchange_weak(free, free - taken)) {
      return taken;
    }
  }
  return -1;
}

}  // namespace
}  // namespace streamreg

using streamreg::control;

extern "C" {

int fsync(int fd) {
  static auto* next = streamreg::Next<int(int)>("fsync");
  return streamreg::SlowCountedSync(next, fd);
}

int fdatasync(int fd) {
  static auto* next = streamreg::Next<int(int)>("fdatasync");
  return streamreg::SlowCountedSync(next, fd);
}

ssize_t write(int fd, const void* data, size_t size) {
  static auto* next =
      streamreg::Next<ssize_t(int, const void*, size_t)>("write");
  if (control == nullptr || control->free_bytes.load() < 0 || size == 0 ||
      !streamreg::UnderDataDir(fd)) {
    return next(fd, data, size);
  }
  const std::int64_t allowed =
      streamreg::TakeFreeBytes(static_cast<std::int64_t>(size));
  if (allowed < 0) return next(fd, data, size);  // the limit was lifted
  if (allowed == 0) {
    ++control->writes_refused;
    errno = ENOSPC;
    return -1;
  }
  return next(fd, data, static_cast<size_t>(allowed));  // a short write
}

int clock_gettime(clockid_t clock, struct timespec* time) {
  static auto* next =
      streamreg::Next<int(clockid_t, struct timespec*)>("clock_gettime");
  const int result = next(clock, time);
  if (result != 0 ||
      (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE)) {
    return result;
  }
  const std::int64_t nanos = time->tv_sec * 1'000'000'000LL + time->tv_nsec +
                             streamreg::RealtimeOffsetNs();
  time->tv_sec = nanos / 1'000'000'000LL;
  time->tv_nsec = nanos % 1'000'000'000LL;
  return 0;
}

int gettimeofday(struct timeval* time, void* zone) {
  static auto* next =
      streamreg::Next<int(struct timeval*, void*)>("gettimeofday");
  const int result = next(time, zone);
  if (result != 0) return result;
  const std::int64_t micros = time->tv_sec * 1'000'000LL + time->tv_usec +
                              streamreg::RealtimeOffsetNs() / 1000;
  time->tv_sec = micros / 1'000'000LL;
  time->tv_usec = micros % 1'000'000LL;
  return 0;
}

time_t time(time_t* result) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (result != nullptr) *result = now.tv_sec;
  return now.tv_sec;
}

}  // extern "C"
