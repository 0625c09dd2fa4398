#include "ucx_tl/transport.hpp"

#include <stdexcept>

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
    case Fault::Withdrawn:
      return "withdrawn by the peer";
    case Fault::Transport:
      return "transport error";
  }
  return "?";
}

bool Transport::direct(int, std::size_t) const {
  return false;
}

void Transport::recvDirect(int peer, std::size_t bytes, Tag, Completion*) {
  throw std::logic_error("Transport::recvDirect: this transport does not receive in place (peer " +
                         std::to_string(peer) + ", " + std::to_string(bytes) + " bytes)");
}

Completion Transport::readDirect(const Completion*, std::size_t, std::span<std::byte>,
                                 std::span<const std::byte>*) {
  throw std::logic_error("Transport::readDirect: this transport does not receive in place");
}

void Transport::finishDirect(Completion*) {}

bool Transport::pushable(int, std::size_t) const {
  return false;
}

void Transport::recvPushed(int peer, std::span<const IoVec>, Tag, Completion*) {
  throw std::logic_error("Transport::recvPushed: this transport does not push (peer " +
                         std::to_string(peer) + ")");
}

void Transport::sendPushed(int peer, std::size_t bytes, Tag, Completion*) {
  throw std::logic_error("Transport::sendPushed: this transport does not push (peer " +
                         std::to_string(peer) + ", " + std::to_string(bytes) + " bytes)");
}

Completion Transport::writeDirect(const Completion*, std::size_t, std::span<const std::byte>) {
  throw std::logic_error("Transport::writeDirect: this transport does not push");
}

bool Transport::sideSend(int, std::span<const std::byte>) {
  return false;
}

void Transport::setSideHandler(SideHandler) {}

std::size_t Transport::heldOrphans() const {
  return 0;
}

std::size_t Transport::sidePending() const {
  return 0;
}

}  // namespace hccl::tl
