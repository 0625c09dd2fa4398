#include "algorithms/write_contract.hpp"

namespace hccl::algo {
namespace {

void rebase(Slice& s, std::uint64_t scratchBase) {
  if (s.buf != Buf::Input) return;
  s.buf = Buf::Scratch;
  s.offset += scratchBase;
}

}  // namespace

bool needsPrivateInput(const Problem& pb) {
  return pb.coll == Collective::ReduceScatter && pb.inPlace && !pb.resultInBlock;
}

RankSchedule withPrivateInput(const Problem& pb, std::uint32_t rank, const RankGenerator& gen) {
  if (!needsPrivateInput(pb)) return gen(pb, rank);
  Problem outOfPlace = pb;
  outOfPlace.inPlace = false;
  RankSchedule body = gen(outOfPlace, rank);
  const std::uint64_t base = scratchCount(body);
  for (Step& st : body.steps) {
    for (Transfer& x : st.xfers) rebase(x.slice, base);
    for (LocalOp& op : st.ops) {
      rebase(op.a, base);
      rebase(op.b, base);
    }
  }
  RankSchedule out;
  copy(out.newStep(), scratch(base, pb.total()), algo::out(0, pb.total()));
  prune(out);
  out.steps.insert(out.steps.end(), std::make_move_iterator(body.steps.begin()),
                   std::make_move_iterator(body.steps.end()));
  return out;
}

}  // namespace hccl::algo
