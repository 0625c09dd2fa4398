#include "coll_hccl/engine/sub_transport.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace hccl::engine {

SubTransport::SubTransport(std::shared_ptr<tl::Transport> base, std::vector<int> members, int rank)
    : base_(std::move(base)), members_(std::move(members)), rank_(rank) {
  if (rank_ < 0 || rank_ >= size() || members_[static_cast<std::size_t>(rank_)] != base_->rank())
    throw std::invalid_argument(
        fmt::format("sub-communicator rank {} does not map to the transport's own rank {}", rank_,
                    base_->rank()));
  for (int m : members_)
    if (m < 0 || m >= base_->size())
      throw std::invalid_argument(
          fmt::format("member {} outside a transport of {} ranks", m, base_->size()));
}

int SubTransport::at(int peer) const {
  if (peer < 0 || peer >= size())
    throw std::out_of_range(fmt::format("peer {} outside a communicator of {}", peer, size()));
  return members_[static_cast<std::size_t>(peer)];
}

tl::LinkClass SubTransport::linkClass(int peer) const {
  return base_->linkClass(at(peer));
}

void SubTransport::send(int peer, std::span<const tl::IoVec> iov, tl::Tag tag,
                        tl::Completion* done) {
  base_->send(at(peer), iov, tag, done);
}

void SubTransport::recv(int peer, std::span<const tl::IoVec> iov, tl::Tag tag,
                        tl::Completion* done) {
  base_->recv(at(peer), iov, tag, done);
}

bool SubTransport::direct(int peer, std::size_t bytes) const {
  return peer >= 0 && peer < size() && base_->direct(at(peer), bytes);
}

void SubTransport::recvDirect(int peer, std::size_t bytes, tl::Tag tag, tl::Completion* done) {
  base_->recvDirect(at(peer), bytes, tag, done);
}

bool SubTransport::pushable(int peer, std::size_t bytes) const {
  return peer >= 0 && peer < size() && base_->pushable(at(peer), bytes);
}

void SubTransport::recvPushed(int peer, std::span<const tl::IoVec> iov, tl::Tag tag,
                              tl::Completion* done) {
  base_->recvPushed(at(peer), iov, tag, done);
}

void SubTransport::sendPushed(int peer, std::size_t bytes, tl::Tag tag, tl::Completion* done) {
  base_->sendPushed(at(peer), bytes, tag, done);
}

}  // namespace hccl::engine
