#include "common/mpi_env.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>

namespace examples {

HostLayout hostLayout(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::array<char, MPI_MAX_PROCESSOR_NAME> mine{};
  int len = 0;
  MPI_Get_processor_name(mine.data(), &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm);
  std::map<std::string, int> ranksPerHost;
  for (int r = 0; r < size; ++r) {
    const char* name = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    ++ranksPerHost[std::string(name, strnlen(name, MPI_MAX_PROCESSOR_NAME))];
  }
  HostLayout layout;
  layout.hosts = static_cast<int>(ranksPerHost.size());
  layout.minRanksPerHost = size;
  for (const auto& [name, count] : ranksPerHost) {
    layout.minRanksPerHost = std::min(layout.minRanksPerHost, count);
    layout.maxRanksPerHost = std::max(layout.maxRanksPerHost, count);
  }
  return layout;
}

MPI_Comm dupWithInfo(MPI_Comm parent, const InfoKeys& keys) {
  MPI_Comm out = MPI_COMM_NULL;
  if (keys.empty()) {
    MPI_Comm_dup(parent, &out);
    return out;
  }
  MPI_Info info = MPI_INFO_NULL;
  MPI_Info_create(&info);
  for (const auto& [key, value] : keys) MPI_Info_set(info, key.c_str(), value.c_str());
  MPI_Comm_dup_with_info(parent, info, &out);
  MPI_Info_free(&info);
  return out;
}

MPI_Comm controlComm(MPI_Comm parent, bool* alone) {
  // An include list (no leading '^') naming nothing but hccl: every rank has the same
  // environment from mpirun, so every rank takes the same branch.
  const char* list = std::getenv("OMPI_MCA_coll");
  bool only = false;
  if (list != nullptr && *list != '\0' && *list != '^') {
    const CollPreference p = parseCollPreference(list);
    only = !p.prefer.empty() &&
           std::all_of(p.prefer.begin(), p.prefer.end(), [](const auto& c) { return c == "hccl"; });
  }
  if (alone != nullptr) *alone = only;
  return only ? dupWithInfo(parent, {})
              : dupWithInfo(parent, {{"ompi_comm_coll_preference", "^hccl"}});
}

std::string libraryVersion() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int len = 0;
  MPI_Get_library_version(text.data(), &len);
  std::string_view v(text.data(), static_cast<std::size_t>(len));
  if (const auto cut = v.find_first_of(",\n"); cut != std::string_view::npos) v = v.substr(0, cut);
  return std::string(v);
}

CollPreference parseCollPreference(const std::string& value) {
  CollPreference p;
  bool excluding = false;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    std::string item = value.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;  // opal_argv_split drops empty entries
    if (!excluding && item.front() == '^') {
      excluding = true;
      item.erase(0, 1);
    }
    if (!item.empty()) (excluding ? p.exclude : p.prefer).push_back(item);
  }
  return p;
}

std::string describe(const CollPreference& p) {
  return fmt::format("prefer [{}], exclude [{}]", fmt::join(p.prefer, ","),
                     fmt::join(p.exclude, ","));
}

}  // namespace examples
