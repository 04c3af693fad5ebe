#include "server/telemetry/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace streamreg {
namespace {

// The fields of /proc/self/stat this writes (proc(5)).
struct ProcessStat {
  double cpu_seconds = 0.0;
  std::uint64_t threads = 0;
  double start_seconds_after_boot = 0.0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t resident_bytes = 0;
};

bool ReadProcessStat(ProcessStat* stat) {
  std::ifstream file("/proc/self/stat");
  std::string line;
  if (!std::getline(file, line)) return false;
  // The command name (field 2) may hold spaces; the rest follows its ')'.
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return false;
  std::istringstream fields(line.substr(name_end + 2));
  std::string field[23];  // fields 3 (state) to 25
  for (std::string& f : field) {
    if (!(fields >> f)) return false;
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto number = [&](int field_number) {
    return std::stoull(field[field_number - 3]);
  };
  stat->cpu_seconds = static_cast<double>(number(14) + number(15)) / ticks;
  stat->threads = number(20);
  stat->start_seconds_after_boot = static_cast<double>(number(22)) / ticks;
  stat->virtual_bytes = number(23);
  stat->resident_bytes = number(24) * static_cast<std::uint64_t>(getpagesize());
  return true;
}

// Seconds since the epoch at boot ("btime" of /proc/stat); 0 if unknown.
double BootTime() {
  std::ifstream file("/proc/stat");
  std::string key;
  double value = 0.0;
  while (file >> key) {
    if (key == "btime") {
      file >> value;
      return value;
    }
    file.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0.0;
}

std::uint64_t OpenFileDescriptors() {
  std::error_code error;
  std::uint64_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end;
       !error && it != end; it.increment(error)) {
    ++count;
  }
  return count;
}

}  // namespace

void WriteProcessMetrics(PrometheusText& out) {
  ProcessStat stat;
  try {
    if (!ReadProcessStat(&stat)) return;
  } catch (const std::exception&) {  // a field that is not a number
    return;
  }
  using Type = PrometheusText::Type;
  out.Family("process_cpu_seconds_total", Type::kCounter,
             "User and system CPU time spent, seconds.");
  out.Sample("process_cpu_seconds_total", {}, stat.cpu_seconds);
  out.Family("process_resident_memory_bytes", Type::kGauge,
             "Resident memory size, bytes.");
  out.Sample("process_resident_memory_bytes", {}, stat.resident_bytes);
  out.Family("process_virtual_memory_bytes", Type::kGauge,
             "Virtual memory size, bytes.");
  out.Sample("process_virtual_memory_bytes", {}, stat.virtual_bytes);
  out.Family("process_start_time_seconds", Type::kGauge,
             "Start time of the process since the Unix epoch, seconds.");
  out.Sample("process_start_time_seconds", {},
             BootTime() + stat.start_seconds_after_boot);
  out.Family("process_threads", Type::kGauge, "Threads of the process.");
  out.Sample("process_threads", {}, stat.threads);
  out.Family("process_open_fds", Type::kGauge, "Open file descriptors.");
  out.Sample("process_open_fds", {}, OpenFileDescriptors());
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.Family("process_max_fds", Type::kGauge,
               "Most file descriptors the process may open.");
    out.Sample("process_max_fds", {},
               static_cast<std::uint64_t>(limit.rlim_cur));
  }
}

}  // namespace streamreg
