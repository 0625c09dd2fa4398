// Reading a whole input file that a user names (RANK_TABLE_FILE, a tuning file, a hierarchy
// JSON) without ever hanging on it or reading without end: the path is opened non-blocking, so a
// FIFO with no writer returns at once instead of stalling MPI_Init; it must be a regular file,
// so a directory, a FIFO, a socket or a device is named as what it is; and it may hold at most
// a bound that the caller states, so /proc-like files that grow or a file given by mistake
// (a core dump) are refused rather than read into memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hccl::text {

struct FileText {
  std::optional<std::string> text;  // the whole file; nullopt on failure
  std::string error;  // on failure: what the path is and what was expected, e.g. "is a
                      // directory; expected a regular file", "cannot be opened: No such file
                      // or directory", "holds more than 64 MiB (the limit for this file)"
};

// Reads `path` if it is a regular file of at most `maxBytes` bytes.
FileText readRegularFile(const std::string& path, std::uint64_t maxBytes);

// "64 MiB", "4 KiB", "100 bytes": a byte count for messages.
std::string byteSize(std::uint64_t bytes);

}  // namespace hccl::text
