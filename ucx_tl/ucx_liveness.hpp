// Whether a process on this machine still runs, for the HCCS class's links.
//
// UCX 1.13's own keepalive over shared memory stops noticing a dead peer once a rendezvous send
// to it is outstanding (reproduced with plain UCP: the endpoint error never comes), so a rank that
// dies mid-collective would only be found by the transport's timeout. Same-server peers can be
// checked directly instead: a process is identified by its pid and start time, which the
// bootstrap exchanges.
#pragma once

#include <chrono>
#include <cstdint>

namespace hccl::tl::ucx {

struct ProcessId {
  std::int64_t pid = 0;
  std::uint64_t startTime = 0;  // /proc/<pid>/stat field 22: tells a reused pid apart
  bool operator==(const ProcessId&) const = default;
};

ProcessId thisProcess();
// False once the process has exited (including while it is an unreaped zombie) or its pid
// belongs to another process.
bool isRunning(const ProcessId& p);
// Whether the process is gone now or goes within `grace`, polled every millisecond: for the
// diagnosis of a copy from its memory that failed. A process killed mid-copy loses its memory
// (the copy fails) before /proc shows it as a zombie, so an immediate isRunning can still say
// "running" and a lost peer would pass for a transport error.
bool exitsWithin(const ProcessId& p, std::chrono::milliseconds grace);
// The process's state letter from /proc/<pid>/stat ('R' running, 'S' sleeping, 'T' stopped by a
// signal, 't' by a debugger, 'Z' zombie, ...), or '\0' when it is gone or the pid was reused.
char processState(const ProcessId& p);

}  // namespace hccl::tl::ucx
