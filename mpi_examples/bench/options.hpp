// Command line of hccl_bench (nccl-tests style short options where they exist there).
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "bench/collective.hpp"
#include "bench/elements.hpp"

namespace bench {

struct Options {
  std::vector<Coll> collectives;
  std::size_t minBytes = 4;
  std::size_t maxBytes = std::size_t{64} << 20;
  std::size_t factor = 2;
  int iters = 0;    // 0: scaled by size, see itersFor
  int warmup = -1;  // -1: a tenth of the iterations, at least 2
  int pairs = 4;
  bool counterbalance = false;  // --order abba: pairs alternate A B / B A
  const TypeInfo* type = nullptr;
  const OpInfo* op = nullptr;
  bool inPlace = false;
  bool check = true;
  std::string compare;   // B's ompi_comm_coll_preference ("" = plain dup)
  std::string preferA;   // A's ompi_comm_coll_preference ("" = none)
  std::string hcclAlgo;  // A's hccl_algo info key ("" = none)
  std::string labelA;
  std::string labelB;
  // More sides (C, D, ...), each a dup with ompi_comm_coll_preference = also[k], timed in the
  // same rotation as A and B; labelled by the first component each prefers.
  std::vector<std::string> also;
  std::vector<std::string> alsoLabels;
  std::string jsonPath;      // "" = no JSON
  std::string plotPath;      // "" = no plot; else a PNG of time and busbw against size
  bool injectWrong = false;  // self-test: spoil one output element per checked call on rank 0
  // Rank 0 also times a single-core memcpy of each size once per pair (the others wait), the
  // memory-traffic yardstick busbw is read against.
  bool memcpyRef = false;

  // OSU's counts (1000 calls up to 8 KiB, 100 above), thinned beyond 1 MiB so that one block
  // moves about 100 MiB: 50 at 2 MiB, 12 at 8 MiB, never fewer than 10.
  int itersFor(std::size_t bytes) const;
  int warmupFor(int iterations) const;
};

// Parses and validates argv. Returns the options, or the exit code when the program must stop
// (0 after --help, 2 after a usage error). Only a rank with print=true writes anything.
std::variant<Options, int> parseOptions(int argc, char** argv, bool print);

}  // namespace bench
