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

const char* name(Fault f) {
  switch (f) {
    case Fault::None:
      return "none";
    case Fault::Timeout:
      return "timeout";
    case Fault::PeerLost:
      return "peer lost";
    case Fault::Mismatch:
      return "size mismatch";
    case Fault::Cancelled:
      return "cancelled";
    case Fault::Transport:
      return "transport error";
  }
  return "?";
}

}  // namespace hccl::tl
