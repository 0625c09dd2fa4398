#include "ucx_tl/ucx_liveness.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace hccl::tl::ucx {

namespace {

struct ProcStat {
  bool found = false;
  char state = '?';
  std::uint64_t startTime = 0;
};

ProcStat readStat(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  // The command name (field 2) may hold spaces and parentheses: parse after its last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(line.substr(close + 1));
  ProcStat s;
  fields >> s.state;  // field 3
  std::string skip;
  for (int field = 4; field < 22; ++field) fields >> skip;
  fields >> s.startTime;  // field 22
  s.found = static_cast<bool>(fields);
  return s;
}

}  // namespace

ProcessId thisProcess() {
  const std::int64_t pid = ::getpid();
  return {pid, readStat(pid).startTime};
}

bool isRunning(const ProcessId& p) {
  const char state = processState(p);
  return state != '\0' && state != 'Z' && state != 'X';
}

bool exitsWithin(const ProcessId& p, std::chrono::milliseconds grace) {
  const auto until = std::chrono::steady_clock::now() + grace;
  while (isRunning(p)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

char processState(const ProcessId& p) {
  const ProcStat s = readStat(p.pid);
  return s.found && s.startTime == p.startTime ? s.state : '\0';
}

}  // namespace hccl::tl::ucx
