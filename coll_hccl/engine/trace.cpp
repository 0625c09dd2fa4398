#include "coll_hccl/engine/trace.hpp"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

namespace hccl::engine {

static_assert(sizeof(TraceLog::Event) == 56, "the parameter's help gives 56 bytes a record");

std::uint64_t TraceLog::now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string TraceLog::pathFor(const std::string& pattern, int rank) {
  const std::string r = std::to_string(rank);
  if (pattern.find("%r") == std::string::npos) return pattern + "." + r;
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 2, "%r") == 0) {
      out += r;
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

void TraceLog::record(const Event& e) noexcept {
  if (events_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  try {
    // Grown by hand so that what is allocated never passes the bound (push_back alone may
    // double past it).
    if (events_.size() == events_.capacity())
      events_.reserve(std::min(capacity_, std::max<std::size_t>(1024, 2 * events_.size())));
    events_.push_back(e);
  } catch (...) {
    ++dropped_;  // out of memory: the trace loses an event, the call goes on
  }
}

std::string TraceLog::json() const {
  // Microseconds, as Chrome's ts and dur are; nanoseconds kept as three decimals.
  const auto us = [](std::uint64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); };
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  const auto add = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  std::set<std::pair<std::uint32_t, std::int32_t>> threads;
  std::set<std::uint32_t> servers;
  for (const Event& e : events_) {
    if (servers.insert(e.server).second)
      add(fmt::format(
          R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"server {}"}}}})",
          e.server, e.server));
    if (threads.insert({e.server, e.self}).second)
      add(fmt::format(
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"rank {}"}}}})",
          e.server, e.self, e.self));
  }
  std::uint64_t id = 0;
  for (const Event& e : events_) {
    const std::string_view coll = hccl::name(e.coll);
    if (e.kind == Kind::Step) {
      add(fmt::format(
          R"({{"ph":"X","name":"step {}","cat":"step","pid":{},"tid":{},"ts":{},"dur":{},)"
          R"("args":{{"coll":"{}","comm":{},"seq":{},"chunk":{},"transfers":{}}}}})",
          e.step, e.server, e.self, us(e.begin), us(e.end - e.begin), coll, e.comm, e.seq, e.chunk,
          e.bytes));
      continue;
    }
    const bool send = e.kind == Kind::Send;
    const std::int32_t src = send ? e.self : e.peer, dst = send ? e.peer : e.self;
    const std::uint64_t flow = (static_cast<std::uint64_t>(e.self) << 32) | id++;
    const std::string common =
        fmt::format(R"("cat":"level{}","name":"{} -> {}","pid":{},"tid":{},"id":{})", e.level, src,
                    dst, e.server, e.self, flow);
    add(fmt::format(R"({{"ph":"b",{},"ts":{},"args":{{"bytes":{},"step":{},"dir":"{}",)"
                    R"("peer":{},"coll":"{}","comm":{},"seq":{},"chunk":{}}}}})",
                    common, us(e.begin), e.bytes, e.step, send ? "send" : "recv", e.peer, coll,
                    e.comm, e.seq, e.chunk));
    add(fmt::format(R"({{"ph":"e",{},"ts":{}}})", common, us(e.end)));
  }
  out += fmt::format(
      "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":\"coll_hccl engine\","
      "\"clock\":\"CLOCK_MONOTONIC\",\"events\":{},\"capacity\":{},\"dropped\":{}}}}}\n",
      events_.size(), capacity_, dropped_);
  return out;
}

bool TraceLog::write(std::string& err) const {
  const std::string text = json();
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) {
    err = fmt::format("coll_hccl_trace: cannot open {}: {}", path_, std::strerror(errno));
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    err = fmt::format("coll_hccl_trace: writing {} failed: {}", path_, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace hccl::engine
