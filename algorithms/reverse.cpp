#include "algorithms/reverse.hpp"

#include <stdexcept>

namespace hccl::algo {
namespace {

// Where a Scatter buffer of rank r lives in the Gather.
Slice toGather(const Problem& pb, std::uint32_t r, Slice s) {
  if (s.buf == Buf::Scratch || s.count == 0) return s;
  if (r != pb.root) {  // the Scatter's Output[count(r)] is the Gather's Input
    s.buf = Buf::Input;
    return s;
  }
  if (pb.inPlace) return s;  // Output[total] in both
  // Out of place: the Scatter root's Input[total] is the Gather's Output[total], its
  // Output[count(root)] the Gather's Input.
  s.buf = s.buf == Buf::Input ? Buf::Output : Buf::Input;
  return s;
}

}  // namespace

RankSchedule gatherByReversing(const Problem& pb, std::uint32_t r, const RankGenerator& scatter) {
  Problem sp = pb;
  sp.coll = Collective::Scatter;
  const RankSchedule fwd = scatter(sp, r);
  RankSchedule out;
  // Forward step s is [transfers T_s, then ops O_s]; backwards: O_s' then T_s', for s from the
  // last step down. O_s' rides in the ops of T_{s+1}' (they run after its transfers, before T_s'
  // is posted); the last forward step's ops get a step of their own.
  for (std::size_t i = fwd.steps.size(); i-- > 0;) {
    const Step& f = fwd.steps[i];
    if (!f.ops.empty()) {
      Step& before = out.steps.empty() ? out.newStep() : out.steps.back();
      for (std::size_t j = f.ops.size(); j-- > 0;) {
        const LocalOp& op = f.ops[j];
        if (op.kind != OpKind::Copy)
          throw std::logic_error("gatherByReversing: the Scatter schedule reduces");
        copy(before, toGather(pb, r, op.a), toGather(pb, r, op.dst));
      }
    }
    Step& t = out.newStep();
    for (const Transfer& x : f.xfers)
      t.xfers.push_back({x.dir == Dir::Send ? Dir::Recv : Dir::Send, x.peer,
                         toGather(pb, r, x.slice), x.level, x.push});
  }
  prune(out);
  return out;
}

}  // namespace hccl::algo
