// The tuning file: defaults are data, files override parts of them, good and bad documents.
#include "algorithms/cost_model.hpp"

#include "algorithms/metrics.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <optional>

namespace hccl::algo {
namespace {

ConfigResult<CostModel> tune(const std::string& text, std::vector<std::string>& warnings) {
  return applyTuning(defaultCostModel(), text, "t.json", warnings);
}

// `text` over the defaults, which must apply without an error or a warning, and the model after a
// trip through the document hccl_calibrate writes (toJson, read back over an empty model).
struct Tuned {
  CostModel model, back;
};
std::optional<Tuned> tuneCleanly(const std::string& text) {
  std::vector<std::string> warnings;
  auto r = tune(text, warnings);
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message;
    return std::nullopt;
  }
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  auto back = applyTuning(CostModel{}, r.value().toJson(), "round trip", warnings);
  if (!back.ok()) {
    ADD_FAILURE() << "round trip: " << back.error().message;
    return std::nullopt;
  }
  return Tuned{r.value(), back.value()};
}

TEST(CostModel, DefaultsAreSane) {
  const CostModel& m = defaultCostModel();
  EXPECT_NE(m.source.find("built-in defaults"), std::string::npos) << m.source;
  for (const LinkParams& l : m.level) {
    EXPECT_GT(l.alpha, 0);
    EXPECT_GT(l.beta, 0);
  }
  // Inside a server is faster than between servers.
  EXPECT_LT(m.level[0].alpha, m.level[1].alpha);
  EXPECT_LT(m.level[0].beta, m.level[1].beta);
  EXPECT_GT(m.gamma(DataType::Float32, ReduceOp::Sum), 0);
  EXPECT_GT(m.gamma(DataType::Float16, ReduceOp::Sum), m.gamma(DataType::Float32, ReduceOp::Sum));
}

TEST(CostModel, JsonRoundTrip) {
  std::vector<std::string> warnings;
  CostModel m = defaultCostModel();
  m.rules.push_back({Collective::AllGather, 1, 10, 20, Algorithm::Ring});
  auto back = applyTuning(CostModel{}, m.toJson(), "round trip", warnings);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(back.value().toJson(),
            applyTuning(CostModel{}, m.toJson(), "round trip", warnings).value().toJson());
  EXPECT_DOUBLE_EQ(back.value().level[1].alpha, m.level[1].alpha);
  EXPECT_NEAR(back.value().level[2].beta, m.level[2].beta, 1e-24);
  EXPECT_DOUBLE_EQ(back.value().gamma(DataType::BFloat16, ReduceOp::Max),
                   m.gamma(DataType::BFloat16, ReduceOp::Max));
  ASSERT_EQ(back.value().rules.size(), 1u);
  EXPECT_EQ(back.value().rules[0].maxBytes, 20u);
}

TEST(CostModel, PartialOverride) {
  std::vector<std::string> warnings;
  auto r = tune(R"({"levels": {"level1": {"alpha_us": 5, "bandwidth_GBps": 10}},
                     "gamma": {"fp32": {"sum": 20}}})",
                warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(warnings.empty());
  EXPECT_DOUBLE_EQ(r.value().level[1].alpha, 5e-6);
  EXPECT_DOUBLE_EQ(r.value().level[1].beta, 1e-10);
  EXPECT_DOUBLE_EQ(r.value().level[0].alpha, defaultCostModel().level[0].alpha);  // untouched
  EXPECT_DOUBLE_EQ(r.value().gamma(DataType::Float32, ReduceOp::Sum), 1.0 / 20e9);
  EXPECT_DOUBLE_EQ(r.value().gamma(DataType::Float32, ReduceOp::Max),
                   defaultCostModel().gamma(DataType::Float32, ReduceOp::Max));
  EXPECT_NE(r.value().source.find("t.json"), std::string::npos);
  EXPECT_NE(r.value().fingerprint(), defaultCostModel().fingerprint());
}

// The shared-memory link has numbers of its own, which level0 takes when it rides that link.
TEST(CostModel, SharedMemoryLinkClassPricesLevel0OnTheLink) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value()) << "the defaults ship link_classes.shm";
  EXPECT_GT(d.sharedMemory->alpha, 0);
  EXPECT_GT(d.sharedMemory->beta, 0);
  // No request, no tag matching: its startup is below UCX tagged messages' on the same peers.
  EXPECT_LT(d.sharedMemory->alpha, d.level[0].alpha);
  const CostModel on = d.withLevel0OnSharedMemory();
  EXPECT_DOUBLE_EQ(on.level[0].alpha, d.sharedMemory->alpha);
  EXPECT_DOUBLE_EQ(on.level[0].beta, d.sharedMemory->beta);
  EXPECT_DOUBLE_EQ(on.level[1].alpha, d.level[1].alpha);  // other levels as they were
  EXPECT_NE(on.source.find("shared-memory link"), std::string::npos) << on.source;
  EXPECT_NE(on.fingerprint(), d.fingerprint());

  std::vector<std::string> warnings;
  const auto t =
      tuneCleanly(R"({"link_classes": {"shm": {"alpha_us": 0.25, "bandwidth_GBps": 9}}})");
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->model.sharedMemory->alpha, 0.25e-6);
  EXPECT_DOUBLE_EQ(t->model.sharedMemory->beta, 1.0 / 9e9);
  EXPECT_DOUBLE_EQ(t->model.level[0].alpha, d.level[0].alpha);  // tagged level0 untouched
  // Round trip through the document calibration writes.
  ASSERT_TRUE(t->back.sharedMemory.has_value());
  EXPECT_DOUBLE_EQ(t->back.sharedMemory->alpha, 0.25e-6);
  // Without the class, level0 keeps its own numbers.
  EXPECT_DOUBLE_EQ(CostModel{}.withLevel0OnSharedMemory().level[0].alpha, 0);

  auto unknown = tune(R"({"link_classes": {"xpmem": {"alpha_us": 1}}})", warnings);
  ASSERT_TRUE(unknown.ok());
  EXPECT_NE(warnings.back().find("\"xpmem\""), std::string::npos) << warnings.back();
  auto bad = tune(R"({"link_classes": {"shm": {"bandwidth_GBps": -1}}})", warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("link_classes.shm.bandwidth_GBps"), std::string::npos)
      << bad.error().message;
}

// A link's step cost: read, round-tripped, and priced only on steps with a message above
// step_from_bytes (metrics.hpp), against the sums computed here.
TEST(CostModel, StepCostAppliesAboveItsThreshold) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  EXPECT_GT(d.sharedMemory->step, 0) << "the defaults ship link_classes.shm.step_us";
  EXPECT_LT(d.sharedMemory->stepFrom, std::uint64_t{64} << 10);
  EXPECT_EQ(d.level[0].step, 0);  // tagged level0: none

  std::vector<std::string> warnings;
  const auto t = tuneCleanly(R"({"link_classes": {"shm": {"alpha_us": 1, "bandwidth_GBps": 1,
                                              "step_us": 30, "step_from_bytes": 1000}}})");
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->model.sharedMemory->step, 30e-6);
  EXPECT_EQ(t->model.sharedMemory->stepFrom, 1000u);
  EXPECT_DOUBLE_EQ(t->back.sharedMemory->step, 30e-6);
  EXPECT_EQ(t->back.sharedMemory->stepFrom, 1000u);

  const CostParams p = t->model.withLevel0OnSharedMemory().params(std::nullopt, std::nullopt);
  const auto stepOf = [&](std::uint64_t bytes) {
    Step st;
    st.xfers.push_back(Transfer{Dir::Send, 1, Slice{Buf::Input, 0, bytes}, 0});
    Metrics path;
    return addStep(st, 1, p, path);
  };
  EXPECT_NEAR(stepOf(1000), 1e-6 + 1000 * 1e-9, 1e-15);          // inline: no step cost
  EXPECT_NEAR(stepOf(1001), 1e-6 + 1001 * 1e-9 + 30e-6, 1e-15);  // a block: the round too

  auto bad = tune(R"({"link_classes": {"shm": {"step_from_bytes": -5}}})", warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("link_classes.shm.step_from_bytes"), std::string::npos)
      << bad.error().message;
}

// The slots' single-copy ranges for copy-only posts (LinkParams::singleCopy): the defaults'
// AllToAll range, none for AllGather and Bcast; read per collective, round-tripped (left out
// where empty), an unknown collective warned about and skipped, malformed ranges rejected with
// their path.
TEST(CostModel, SingleCopyRangesAreReadAndRoundTripped) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  const auto& dr = d.sharedMemory->singleCopy;
  EXPECT_TRUE(dr[static_cast<std::size_t>(Collective::Broadcast)].empty());
  // AllGather: every size through the slots (measured faster there with 64 KiB slots).
  EXPECT_TRUE(dr[static_cast<std::size_t>(Collective::AllGather)].empty());
  const LinkParams::ByteRange aa = dr[static_cast<std::size_t>(Collective::AllToAll)];
  EXPECT_FALSE(aa.contains(256u << 10));
  EXPECT_TRUE(aa.contains(512u << 10));
  EXPECT_FALSE(aa.contains(4u << 20));

  std::vector<std::string> warnings;
  auto r = tune(R"({"link_classes": {"shm": {"single_copy": {"broadcast": [1000, 5000],
                                                              "allgatherz": [1, 2]}}}})",
                warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("allgatherz"), std::string::npos) << warnings[0];
  const LinkParams::ByteRange b =
      r.value().sharedMemory->singleCopy[static_cast<std::size_t>(Collective::Broadcast)];
  EXPECT_EQ(b.from, 1000u);
  EXPECT_EQ(b.below, 5000u);
  warnings.clear();
  auto back = applyTuning(CostModel{}, r.value().toJson(), "round trip", warnings);
  ASSERT_TRUE(back.ok()) << back.error().message;
  const LinkParams::ByteRange bb =
      back.value().sharedMemory->singleCopy[static_cast<std::size_t>(Collective::Broadcast)];
  EXPECT_EQ(bb.from, 1000u);
  EXPECT_EQ(bb.below, 5000u);

  for (const char* v : {"[5, 1]", "[-1, 5]", "[1]", "7", "[1.5, 9]"}) {
    auto bad =
        tune(std::string(R"({"link_classes": {"shm": {"single_copy": {"allgather": )") + v + "}}}}",
             warnings);
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_NE(bad.error().message.find("link_classes.shm.single_copy.allgather"), std::string::npos)
        << bad.error().message;
  }
}

// fast_single_copy: the built-in alternative for a machine whose CMA is fast, chosen by the
// link's measured ratio against below_ratio; a tuning file's fields merge into it, its ranges
// replace the class's only for the collectives it names, it round-trips, and bad values name
// their path.
TEST(CostModel, FastSingleCopyFollowsTheMeasuredRatio) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  const LinkParams& shm = *d.sharedMemory;
  const double below = shm.fastSingleCopy.belowRatio;
  ASSERT_GT(below, 1.0) << "the defaults ship link_classes.shm.fast_single_copy.below_ratio";
  const auto at = [](const LinkParams::Paths& p, Collective c) {
    return p.singleCopy[static_cast<std::size_t>(c)];
  };
  // Not measured, or slower than below_ratio: the class's own.
  for (double ratio : {0.0, below * 1.01, 1e9}) {
    const LinkParams::Paths p = shm.pathsFor(ratio);
    EXPECT_FALSE(p.fast) << ratio;
    EXPECT_EQ(p.streamFrom, shm.streamFrom) << ratio;
    EXPECT_TRUE(at(p, Collective::AllGather).empty()) << ratio;
    EXPECT_TRUE(at(p, Collective::AllToAll).contains(512u << 10)) << ratio;
  }
  // Fast: AllGather and Bcast from 16 KiB (Bcast below 1 MiB), streaming from 4 MiB posts,
  // AllToAll's range kept.
  const LinkParams::Paths f = shm.pathsFor(below);
  EXPECT_TRUE(f.fast);
  EXPECT_EQ(f.streamFrom, 4u << 20);
  EXPECT_EQ(shm.streamFrom, 64u << 10);
  EXPECT_FALSE(at(f, Collective::AllGather).contains(16383));
  EXPECT_TRUE(at(f, Collective::AllGather).contains(16384));
  EXPECT_TRUE(at(f, Collective::AllGather).contains(std::uint64_t{1} << 36));
  EXPECT_TRUE(at(f, Collective::Broadcast).contains(16384));
  EXPECT_FALSE(at(f, Collective::Broadcast).contains(1u << 20));
  EXPECT_EQ(at(f, Collective::AllToAll).from, at(shm.pathsFor(0), Collective::AllToAll).from);

  std::vector<std::string> warnings;
  auto r = tune(R"({"link_classes": {"shm": {"fast_single_copy": {"stream_from_bytes": 4096,
                      "single_copy": {"broadcast": [7, 9]}}}}})",
                warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(warnings.empty());
  const LinkParams& t = *r.value().sharedMemory;
  EXPECT_EQ(t.fastSingleCopy.belowRatio, below) << "merged into the built-in one";
  const LinkParams::Paths tf = t.pathsFor(1.0);
  EXPECT_EQ(tf.streamFrom, 4096u);
  EXPECT_EQ(at(tf, Collective::Broadcast).from, 7u);
  EXPECT_EQ(at(tf, Collective::Broadcast).below, 9u);
  EXPECT_TRUE(at(tf, Collective::AllGather).contains(16384)) << "the built-in one's, kept";
  auto back = applyTuning(CostModel{}, r.value().toJson(), "round trip", warnings);
  ASSERT_TRUE(back.ok()) << back.error().message;
  const LinkParams::Paths bf = back.value().sharedMemory->pathsFor(1.0);
  EXPECT_TRUE(bf.fast);
  EXPECT_EQ(bf.streamFrom, 4096u);
  EXPECT_EQ(at(bf, Collective::Broadcast).below, 9u);

  // The class's own stream_from_bytes and single_copy, given in a file, hold on every machine:
  // the built-in fast alternative no longer replaces them (it keeps the rest).
  auto own = tune(R"({"link_classes": {"shm": {"stream_from_bytes": 0,
                      "single_copy": {"allgather": [1, 2]}}}})",
                  warnings);
  ASSERT_TRUE(own.ok()) << own.error().message;
  const LinkParams::Paths of = own.value().sharedMemory->pathsFor(1.0);
  EXPECT_TRUE(of.fast);
  EXPECT_EQ(of.streamFrom, 0u);
  EXPECT_EQ(at(of, Collective::AllGather).from, 1u);
  EXPECT_EQ(at(of, Collective::AllGather).below, 2u);
  EXPECT_TRUE(at(of, Collective::Broadcast).contains(16384));

  // below_ratio 0: never (what hccl_calibrate writes).
  auto off =
      tune(R"({"link_classes": {"shm": {"fast_single_copy": {"below_ratio": 0}}}})", warnings);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(off.value().sharedMemory->pathsFor(1.0).fast);

  // What turns paths off survives printing and reading back over the built-in defaults (as
  // `hccl_info tuning`'s output used as a tuning file is read): below_ratio 0, streaming 0, an
  // empty single_copy range.
  auto calibrated = tune(R"({"link_classes": {"shm": {"stream_from_bytes": 0,
                             "single_copy": {"broadcast": [0, 0]},
                             "fast_single_copy": {"below_ratio": 0}}}})",
                         warnings);
  ASSERT_TRUE(calibrated.ok()) << calibrated.error().message;
  warnings.clear();
  auto reread = applyTuning(defaultCostModel(), calibrated.value().toJson(), "reread", warnings);
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  EXPECT_TRUE(warnings.empty());
  for (double ratio : {0.0, 1.0}) {
    const LinkParams::Paths p = reread.value().sharedMemory->pathsFor(ratio);
    EXPECT_FALSE(p.fast) << ratio;
    EXPECT_EQ(p.streamFrom, 0u) << ratio;
    EXPECT_TRUE(at(p, Collective::Broadcast).empty()) << ratio;
    EXPECT_TRUE(at(p, Collective::AllGather).empty()) << ratio;
    EXPECT_TRUE(at(p, Collective::AllToAll).contains(512u << 10)) << ratio;
  }
  // And a fast alternative the file left as the defaults' is the same after the trip.
  auto same = applyTuning(defaultCostModel(), defaultCostModel().toJson(), "defaults", warnings);
  ASSERT_TRUE(same.ok()) << same.error().message;
  for (double ratio : {0.0, 1.0}) {
    const LinkParams::Paths a = shm.pathsFor(ratio), b = same.value().sharedMemory->pathsFor(ratio);
    EXPECT_EQ(a.fast, b.fast) << ratio;
    EXPECT_EQ(a.streamFrom, b.streamFrom) << ratio;
    for (std::size_t c = 0; c < a.singleCopy.size(); ++c) {
      EXPECT_EQ(a.singleCopy[c].empty(), b.singleCopy[c].empty()) << ratio << " " << c;
      if (!a.singleCopy[c].empty()) {
        EXPECT_EQ(a.singleCopy[c].from, b.singleCopy[c].from) << ratio << " " << c;
        EXPECT_EQ(a.singleCopy[c].below, b.singleCopy[c].below) << ratio << " " << c;
      }
    }
  }

  for (const char* v : {R"({"below_ratio": -1})", R"({"stream_from_bytes": "4K"})",
                        R"({"single_copy": {"allgather": [9, 1]}})", "[]"}) {
    auto bad = tune(std::string(R"({"link_classes": {"shm": {"fast_single_copy": )") + v + "}}}",
                    warnings);
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_NE(bad.error().message.find("link_classes.shm.fast_single_copy"), std::string::npos)
        << bad.error().message;
  }
  warnings.clear();
  auto unknown = tune(R"({"link_classes": {"shm": {"fast_single_copy": {"ratio": 2}}}})", warnings);
  ASSERT_TRUE(unknown.ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("below_ratio"), std::string::npos) << warnings[0];
}

// A half-duplex link: read, round-tripped, and a step that sends and receives priced at the sum
// of both directions (over one link), against the sums computed here; full duplex at the larger.
TEST(CostModel, HalfDuplexAddsBothDirections) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  EXPECT_TRUE(d.sharedMemory->halfDuplex) << "the defaults ship link_classes.shm.half_duplex";
  EXPECT_FALSE(d.level[0].halfDuplex);  // tagged level0: full duplex

  std::vector<std::string> warnings;
  const auto t =
      tuneCleanly(R"({"link_classes": {"shm": {"alpha_us": 1, "bandwidth_GBps": 1, "links": 1,
                                              "half_duplex": true}}})");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->model.sharedMemory->halfDuplex);
  EXPECT_TRUE(t->back.sharedMemory->halfDuplex);

  const auto stepOf = [](const CostParams& p) {
    Step st;
    st.xfers.push_back(Transfer{Dir::Send, 1, Slice{Buf::Input, 0, 300}, 0});
    st.xfers.push_back(Transfer{Dir::Recv, 1, Slice{Buf::Output, 0, 500}, 0});
    Metrics path;
    return addStep(st, 1, p, path);
  };
  CostModel half = t->model.withLevel0OnSharedMemory();
  EXPECT_NEAR(stepOf(half.params(std::nullopt, std::nullopt)), 1e-6 + 800 * 1e-9, 1e-15);
  half.level[0].halfDuplex = false;
  EXPECT_NEAR(stepOf(half.params(std::nullopt, std::nullopt)), 1e-6 + 500 * 1e-9, 1e-15);

  auto bad = tune(R"({"link_classes": {"shm": {"half_duplex": 1}}})", warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("link_classes.shm.half_duplex"), std::string::npos)
      << bad.error().message;
}

// The memory-traffic term (memory_GBps): read, round-tripped, and a step's largest pushed send
// above the inline size credited memory per byte (at most beta), against sums computed here:
// beta 1 ns/B, memory 0.5 ns/B, alpha 1 us, step_from 100 B, one link, half duplex.
TEST(CostModel, MemoryTermCreditsTheLargestStreamedPush) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  EXPECT_GT(d.sharedMemory->memory, 0) << "the defaults ship link_classes.shm.memory_GBps";
  EXPECT_EQ(d.level[0].memory, 0);  // tagged level0: no pushes, no term

  std::vector<std::string> warnings;
  const auto t =
      tuneCleanly(R"({"link_classes": {"shm": {"alpha_us": 1, "bandwidth_GBps": 1, "links": 1,
                                              "step_us": 0, "step_from_bytes": 100,
                                              "half_duplex": true, "memory_GBps": 2}}})");
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->model.sharedMemory->memory, 0.5e-9, 1e-21);
  EXPECT_NEAR(t->back.sharedMemory->memory, 0.5e-9, 1e-21);

  // Pushed sends of `a` to rank 1 and `b` to rank 2, a pushed receive of 500 from rank 1.
  const auto stepOf = [](const CostParams& p, std::uint64_t a, std::uint64_t b, bool push) {
    Step st;
    st.xfers.push_back(Transfer{Dir::Send, 1, Slice{Buf::Output, 0, a}, 0, push});
    st.xfers.push_back(Transfer{Dir::Send, 2, Slice{Buf::Output, 0, b}, 0, push});
    st.xfers.push_back(Transfer{Dir::Recv, 1, Slice{Buf::Output, a, 500}, 0, push});
    Metrics path;
    return addStep(st, 1, p, path);
  };
  CostModel m = t->model.withLevel0OnSharedMemory();
  const CostParams p = m.params(std::nullopt, std::nullopt);
  // 300 + 200 + 500 bytes through the one half-duplex link; only the largest push (300) streams.
  EXPECT_NEAR(stepOf(p, 300, 200, true), 1e-6 + 1000e-9 - 300 * 0.5e-9, 1e-15);
  EXPECT_NEAR(stepOf(p, 300, 200, false), 1e-6 + 1000e-9, 1e-15);  // not pushed: no credit
  EXPECT_NEAR(stepOf(p, 90, 60, true), 1e-6 + 650e-9, 1e-15);      // inline sizes: not pushed
  CostParams slow = p;  // memory slower than the link: a byte saves at most its beta
  slow.memory[0] = 2e-9;
  EXPECT_NEAR(stepOf(slow, 300, 200, true), 1e-6 + 1000e-9 - 300 * 1e-9, 1e-15);

  auto off = tune(R"({"link_classes": {"shm": {"memory_GBps": 0}}})", warnings);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off.value().sharedMemory->memory, 0);
  EXPECT_EQ(off.value().toJson().find("memory_GBps"), std::string::npos);
  auto bad = tune(R"({"link_classes": {"shm": {"memory_GBps": -1}}})", warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("link_classes.shm.memory_GBps"), std::string::npos)
      << bad.error().message;
}

// A post (post_step_us, Transfer::post): read, round-tripped, and priced as one write of the slice
// and each reader's copy, its round above step_from_bytes post_step_us instead of step_us,
// against sums computed here: alpha 1 us, 1 ns/B, step_from 100 B, step 50 us, post step 4 us,
// one link, half duplex. The shipped defaults have it on the shared-memory class only.
TEST(CostModel, PostIsOneWriteWithItsOwnRound) {
  const CostModel& d = defaultCostModel();
  ASSERT_TRUE(d.sharedMemory.has_value());
  EXPECT_TRUE(d.sharedMemory->posts) << "the defaults ship link_classes.shm.post_step_us";
  EXPECT_FALSE(d.level[0].posts);  // tagged level0: sends to every peer

  const auto t =
      tuneCleanly(R"({"link_classes": {"shm": {"alpha_us": 1, "bandwidth_GBps": 1, "links": 1,
                                              "step_us": 50, "step_from_bytes": 100,
                                              "half_duplex": true, "post_step_us": 4}}})");
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->model.sharedMemory->postStep, 4e-6, 1e-18);
  EXPECT_TRUE(t->back.sharedMemory->posts);
  EXPECT_NEAR(t->back.sharedMemory->postStep, 4e-6, 1e-18);

  // The writer's step: `bytes` to ranks 1, 2 and 3, as a post or as three sends; a reader's: the
  // post's copy.
  const auto writer = [](const CostParams& p, std::uint64_t bytes, bool post) {
    Step st;
    for (std::uint32_t peer = 1; peer <= 3; ++peer)
      (post ? sendPost : send)(st, peer, Slice{Buf::Output, 0, bytes});
    Metrics path;
    return addStep(st, 1, p, path);
  };
  const auto reader = [](const CostParams& p, std::uint64_t bytes) {
    Step st;
    recvPost(st, 0, Slice{Buf::Output, 0, bytes});
    Metrics path;
    return addStep(st, 1, p, path);
  };
  const CostParams p = t->model.withLevel0OnSharedMemory().params(std::nullopt, std::nullopt);
  EXPECT_NEAR(writer(p, 1000, true), 1e-6 + 1000e-9 + 4e-6, 1e-15);
  EXPECT_NEAR(reader(p, 1000), 1e-6 + 1000e-9 + 4e-6, 1e-15);
  EXPECT_NEAR(writer(p, 80, true), 1e-6 + 80e-9, 1e-15);  // inline: no round
  EXPECT_NEAR(writer(p, 1000, false), 1e-6 + 3000e-9 + 50e-6, 1e-15);
  // A post mixed with a plain send on the level: the plain send's round, the post written once.
  Step mixed;
  for (std::uint32_t peer = 1; peer <= 2; ++peer)
    sendPost(mixed, peer, Slice{Buf::Output, 0, 1000});
  send(mixed, 3, Slice{Buf::Output, 1000, 500});
  Metrics path;
  EXPECT_NEAR(addStep(mixed, 1, p, path), 1e-6 + 1500e-9 + 50e-6, 1e-15);
  // Without post_step_us (level0 on UCX tagged messages): three sends.
  CostModel tagged = t->model;
  tagged.level[0] = *t->model.sharedMemory;
  tagged.level[0].posts = false;
  EXPECT_NEAR(writer(tagged.params(std::nullopt, std::nullopt), 1000, true), 1e-6 + 3000e-9 + 50e-6,
              1e-15);

  std::vector<std::string> warnings;
  auto bad = tune(R"({"link_classes": {"shm": {"post_step_us": -1}}})", warnings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("link_classes.shm.post_step_us"), std::string::npos)
      << bad.error().message;
}

TEST(CostModel, UnknownNamesAreWarningsNotErrors) {
  std::vector<std::string> warnings;
  auto r = tune(R"({"levels": {"level7": {}}, "gamma": {"fp8": {"sum": 1}, "fp32": {"avg": 1}},
                     "rules": [{"collective": "allreduce", "algorithm": "SuperRing"},
                               {"collective": "gatherw", "algorithm": "ring"},
                               {"collective": "allreduce", "algorithm": "ring", "max_bytes": 99}],
                     "colour": "blue"})",
                warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().rules.size(), 1u);  // only the valid rule survives
  EXPECT_EQ(r.value().rules[0].algorithm, Algorithm::Ring);
  std::string all;
  for (const auto& w : warnings) all += w + "\n";
  for (const char* needle : {"level7", "fp8", "avg", "SuperRing", "gatherw", "colour"})
    EXPECT_NE(all.find(needle), std::string::npos) << needle << " not in:\n" << all;
}

TEST(CostModel, BadDocumentsAreErrorsNamingTheMember) {
  const std::pair<const char*, const char*> cases[] = {
      {"{not json", "invalid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {R"({"version": 2})", "version: expected 1"},
      {R"({"levels": {"level1": {"alpha_us": "fast"}}})", "levels.level1.alpha_us"},
      {R"({"levels": {"level1": {"bandwidth_GBps": 0}}})", "expected a positive number"},
      {R"({"levels": {"level0": {"links": -1}}})", "levels.level0.links"},
      {R"({"gamma": {"fp32": {"sum": -3}}})", "gamma.fp32.sum"},
      {R"({"rules": [{"algorithm": "ring"}]})", "rules[0].collective"},
      {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "level": 5}]})",
       "rules[0].level"},
      {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "min_bytes": 9,
                      "max_bytes": 1}]})",
       "min_bytes is larger"},
      // HCCL's default rules (hccl_rules.hpp)
      {R"({"hccl_rules": {"level": 1}})", "hccl_rules: expected an array"},
      {R"({"hccl_rules": [{"algorithm": "ring"}]})", "hccl_rules[0].level: expected 0, 1 or 2"},
      {R"({"hccl_rules": [{"level": 3, "algorithm": "ring"}]})", "hccl_rules[0].level"},
      {R"({"hccl_rules": [{"level": 1}]})", "hccl_rules[0].algorithm"},
      {R"({"hccl_rules": [{"level": 1, "algorithm": "ring", "within": "pipeline"}]})",
       "hccl_rules[0].within: expected \"AHC\""},
      {R"({"hccl_rules": [{"level": 1, "algorithm": "ring", "group_size": {"min": -1}}]})",
       "hccl_rules[0].group_size.min"},
      {R"({"hccl_rules": [{"level": 1, "algorithm": "ring", "servers": {"min": 4, "max": 2}}]})",
       "hccl_rules[0].servers: min is larger than max"},
      {R"({"hccl_rules": [{"level": 1, "algorithm": "ring", "min_bytes": 9, "max_bytes": 1}]})",
       "min_bytes is larger than max_bytes"},
      {R"({"hccl_rules": [{"level": 1, "algorithm": "ring", "deterministic": "yes"}]})",
       "hccl_rules[0].deterministic: expected true or false"},
  };
  for (const auto& [text, needle] : cases) {
    std::vector<std::string> warnings;
    auto r = tune(text, warnings);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << text << " -> " << r.error().message;
    EXPECT_EQ(r.error().message.find("t.json"), 0u) << r.error().message;
  }
}

TEST(CostModel, FilesAreReadAndMissingOnesNamed) {
  std::vector<std::string> warnings;
  auto missing = loadTuningFile(defaultCostModel(), "/nonexistent/tuning.json", warnings);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "tuning file /nonexistent/tuning.json: cannot be opened: No such file or directory");
  // Neither a directory nor a FIFO is read (a FIFO would block the communicator's creation).
  const auto dir = loadTuningFile(defaultCostModel(), ::testing::TempDir(), warnings);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find(": is a directory; expected a regular file"),
            std::string::npos)
      << dir.error().message;
  const std::string fifo = ::testing::TempDir() + "/hccl_tuning_fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto pipe = loadTuningFile(defaultCostModel(), fifo, warnings);
  ASSERT_FALSE(pipe.ok());
  EXPECT_EQ(pipe.error().message,
            "tuning file " + fifo + ": is a FIFO (named pipe); expected a regular file");
  std::remove(fifo.c_str());
  const std::string path = ::testing::TempDir() + "/hccl_tuning_test.json";
  std::ofstream(path) << R"({"description": "measured", "levels": {"level2": {"alpha_us": 99}}})";
  auto ok = loadTuningFile(defaultCostModel(), path, warnings);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_DOUBLE_EQ(ok.value().level[2].alpha, 99e-6);
  EXPECT_NE(ok.value().source.find("measured"), std::string::npos);
  std::remove(path.c_str());
}

TEST(CostModel, RulesMatchFirstWithInclusiveBounds) {
  CostModel m;
  m.rules = {{Collective::AllReduce, 1, 0, 100, Algorithm::Ring},
             {Collective::AllReduce, 1, 50, 1000, Algorithm::Rhd}};
  EXPECT_EQ(m.rule(Collective::AllReduce, 1, 100), Algorithm::Ring);
  EXPECT_EQ(m.rule(Collective::AllReduce, 1, 101), Algorithm::Rhd);
  EXPECT_EQ(m.rule(Collective::AllReduce, 0, 10), std::nullopt);
  EXPECT_EQ(m.rule(Collective::AllGather, 1, 10), std::nullopt);
}

}  // namespace
}  // namespace hccl::algo
