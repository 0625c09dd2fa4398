// Byte sizes on the tools' command lines: "4096", "64K", "16M", "1G" (or KiB, MiB, GiB, B).
#pragma once

#include <cstdint>
#include <string>

namespace hccl::tools {

// algo::parseByteSize; throws CLI::ValidationError naming the text, its position and the
// accepted forms.
std::uint64_t parseSizeOption(const std::string& s);

}  // namespace hccl::tools
