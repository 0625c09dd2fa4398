#include "ucx_tl/ucx_reports.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <sstream>

#include "ucx_tl/ucx_transport.hpp"

namespace hccl::tl {

namespace {

constexpr std::array kSharedMemoryTls = {"self", "posix", "sysv", "cma", "xpmem", "knem"};
constexpr std::array kRdmaTls = {"rc_verbs", "ud_verbs", "rc_mlx5", "dc_mlx5", "ud_mlx5"};

bool available(std::string_view tl) {
  const auto& all = availableTransports();
  return std::find(all.begin(), all.end(), tl) != all.end();
}

template <std::size_t N>
std::vector<std::string> presentOf(const std::array<const char*, N>& wanted) {
  std::vector<std::string> out;
  for (const char* tl : wanted) {
    if (available(tl)) out.emplace_back(tl);
  }
  return out;
}

std::vector<std::string> probeTransports() {
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return {};
  ucp_config_modify(config, "TLS", "all");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  const ucs_status_t status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status != UCS_OK) return {};
  std::vector<std::string> names;
  for (const auto& r : ucx::parseResources(
           ucx::capture([context](FILE* f) { ucp_context_print_info(context, f); }))) {
    names.emplace_back(ucx::tlOf(r));
  }
  ucp_cleanup(context);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

const std::vector<std::string>& availableTransports() {
  static const std::vector<std::string> names = probeTransports();
  return names;
}

std::string defaultTls(LinkClass c) {
  std::vector<std::string> tls;
  if (c == LinkClass::Roce) {
    tls = presentOf(kRdmaTls);
    tls.emplace_back("tcp");
  } else {
    tls = presentOf(kSharedMemoryTls);
    if (tls.empty()) tls = {"self", "posix", "sysv", "cma"};  // UCX will say what is missing
  }
  return fmt::format("{}", fmt::join(tls, ","));
}

const char* className(LinkClass c) {
  switch (c) {
    case LinkClass::Self:
      return "Self";
    case LinkClass::Hccs:
      return "HCCS";
    case LinkClass::Roce:
      return "RoCE";
  }
  return "?";
}

}  // namespace hccl::tl

namespace hccl::tl::ucx {

TlKind kindOf(std::string_view tl) {
  for (const char* local : {"self", "cuda_copy", "rocm_copy", "gdr_copy"}) {
    if (tl == local) return TlKind::Local;
  }
  for (const char* sm : {"posix", "sysv", "cma", "xpmem", "knem", "cuda_ipc", "rocm_ipc"}) {
    if (tl == sm) return TlKind::SharedMemory;
  }
  return TlKind::Network;
}

std::string capture(const std::function<void(FILE*)>& print) {
  char* data = nullptr;
  std::size_t length = 0;
  FILE* f = open_memstream(&data, &length);
  if (f == nullptr) return {};
  print(f);
  std::fclose(f);
  std::string text(data, length);
  std::free(data);
  return text;
}

namespace {

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

// Lines look like "#      resource 0  :  md 0  dev 0  flags -- posix/memory".
std::vector<std::string> parseResources(std::string_view contextInfo) {
  std::vector<std::string> out;
  for (const auto& line : lines(contextInfo)) {
    if (line.find("resource") == std::string::npos) continue;
    const auto last = line.find_last_of(" \t");
    if (last == std::string::npos) continue;
    std::string token = line.substr(last + 1);
    if (token.find('/') != std::string::npos) out.push_back(token);
  }
  return out;
}

// Lines look like "#   lane[0]:  1:tcp/lo.0 md[0]  -> md[0]/tcp/sysdev[255] am am_bw#0 keepalive";
// ".0" is the path index, and device names may themselves contain dots.
std::vector<std::string> parseLanes(std::string_view endpointInfo) {
  std::vector<std::string> out;
  for (const auto& line : lines(endpointInfo)) {
    const auto lane = line.find("lane[");
    if (lane == std::string::npos) continue;
    const auto colon = line.find("]:", lane);
    if (colon == std::string::npos) continue;
    std::istringstream rest(line.substr(colon + 2));
    std::string token;
    rest >> token;
    const auto idSep = token.find(':');
    if (idSep != std::string::npos) token.erase(0, idSep + 1);
    const auto dot = token.find_last_of('.');
    if (dot != std::string::npos && dot + 1 < token.size() &&
        std::all_of(token.begin() + static_cast<std::ptrdiff_t>(dot) + 1, token.end(),
                    [](char ch) { return ch >= '0' && ch <= '9'; })) {
      token.erase(dot);
    }
    if (token.find('/') != std::string::npos) out.push_back(token);
  }
  return out;
}

std::string_view tlOf(std::string_view resource) {
  return resource.substr(0, resource.find('/'));
}

}  // namespace hccl::tl::ucx
