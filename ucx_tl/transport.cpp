#include "ucx_tl/transport.hpp"

namespace hccl::tl {

const char* name(LinkClass c) {
  switch (c) {
    case LinkClass::Self:
      return "self";
    case LinkClass::Hccs:
      return "hccs";
    case LinkClass::Roce:
      return "roce";
  }
  return "?";
}

}  // namespace hccl::tl
