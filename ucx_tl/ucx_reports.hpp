// Reading UCX's own reports: which transports a context opened, which lanes an endpoint uses,
// what kind of traffic a transport carries, and which transports this machine offers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hccl::tl::ucx {

// What a UCX transport can carry, by its name ("posix", "tcp", ...). Local transports never reach
// another process by themselves (the loopback "self", GPU memory-copy helpers).
enum class TlKind : std::uint8_t { Local, SharedMemory, Network };
TlKind kindOf(std::string_view tl);

// Whatever `print` writes to a FILE*, as a string (UCX reports only to streams).
std::string capture(const std::function<void(FILE*)>& print);

// "tl/dev" of every resource in ucp_context_print_info's report.
std::vector<std::string> parseResources(std::string_view contextInfo);
// "tl/dev" of every lane in ucp_ep_print_info's report, without the path index.
std::vector<std::string> parseLanes(std::string_view endpointInfo);
// The transport part of "tl/dev".
std::string_view tlOf(std::string_view resource);

}  // namespace hccl::tl::ucx
