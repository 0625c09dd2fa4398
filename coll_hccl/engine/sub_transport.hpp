// A communicator's view of a transport built for a larger group (MPI_COMM_WORLD): communicator
// rank i is rank members[i] of the underlying transport. Sub-communicators share the world's
// UCX contexts, workers and endpoints instead of opening their own; the tag's comm field keeps
// their messages apart.
#pragma once

#include <memory>
#include <vector>

#include "ucx_tl/transport.hpp"

namespace hccl::engine {

class SubTransport final : public tl::Transport {
 public:
  SubTransport(std::shared_ptr<tl::Transport> base, std::vector<int> members, int rank);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  tl::LinkClass linkClass(int peer) const override;
  void send(int peer, std::span<const tl::IoVec> iov, tl::Tag tag, tl::Completion* done) override;
  void recv(int peer, std::span<const tl::IoVec> iov, tl::Tag tag, tl::Completion* done) override;
  int progress() override { return base_->progress(); }
  void cancel(tl::Completion* done) override { base_->cancel(done); }
  std::size_t heldOrphans() const override { return base_->heldOrphans(); }
  bool direct(int peer, std::size_t bytes) const override;
  void recvDirect(int peer, std::size_t bytes, tl::Tag tag, tl::Completion* done) override;
  tl::Completion readDirect(const tl::Completion* done, std::size_t offset,
                            std::span<std::byte> into, std::span<const std::byte>* view) override {
    return base_->readDirect(done, offset, into, view);
  }
  void finishDirect(tl::Completion* done) override { base_->finishDirect(done); }
  bool pushable(int peer, std::size_t bytes) const override;
  void recvPushed(int peer, std::span<const tl::IoVec> iov, tl::Tag tag,
                  tl::Completion* done) override;
  void sendPushed(int peer, std::size_t bytes, tl::Tag tag, tl::Completion* done) override;
  tl::Completion writeDirect(const tl::Completion* done, std::size_t offset,
                             std::span<const std::byte> from) override {
    return base_->writeDirect(done, offset, from);
  }

 private:
  int at(int peer) const;
  std::shared_ptr<tl::Transport> base_;
  std::vector<int> members_;
  int rank_;
};

}  // namespace hccl::engine
