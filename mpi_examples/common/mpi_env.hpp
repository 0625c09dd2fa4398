// Small MPI helpers shared by the examples: where the ranks run, and communicators carrying info
// keys (how a program steers Open MPI's per-communicator component choice).
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace examples {

struct HostLayout {
  int hosts = 0;            // distinct processor names
  int minRanksPerHost = 0;  // fewest ranks on one host
  int maxRanksPerHost = 0;  // most ranks on one host
};

// Collective over comm; every rank gets the same answer.
HostLayout hostLayout(MPI_Comm comm);

using InfoKeys = std::vector<std::pair<std::string, std::string>>;

// MPI_Comm_dup when keys is empty, MPI_Comm_dup_with_info otherwise. Collective over parent.
MPI_Comm dupWithInfo(MPI_Comm parent, const InfoKeys& keys);

// A duplicate of parent for bookkeeping that keeps coll_hccl out (info key
// ompi_comm_coll_preference=^hccl), so the component under test never carries the numbers that
// judge it; a plain duplicate when coll_hccl is the only coll component Open MPI loads
// (`--mca coll hccl`, seen in OMPI_MCA_coll): excluding it there leaves the communicator without
// any component, which Open MPI 4.1.4 reports and then crashes on (mca_coll_base_comm_unselect).
// Collective over parent. *alone, when given, says which it was.
MPI_Comm controlComm(MPI_Comm parent, bool* alone = nullptr);

// One line: MPI_Get_library_version without its trailing build details.
std::string libraryVersion();

// How Open MPI 4.1.4 reads an `ompi_comm_coll_preference` value (coll_base_comm_select.c,
// check_components): names before the first '^' entry are preferred, first = highest; that entry
// and EVERY later one are excluded, and only the first entry loses its '^'.
struct CollPreference {
  std::vector<std::string> prefer;
  std::vector<std::string> exclude;
};
CollPreference parseCollPreference(const std::string& value);
std::string describe(const CollPreference& p);

}  // namespace examples
