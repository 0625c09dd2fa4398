// The progress board (shared memory between ranks of a host) and the culprit rules of fault
// diagnosis, with real processes: a stopped child, an exited child, and this process as the
// running ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/types.hpp"
#include "coll_hccl/engine/diagnosis.hpp"
#include "coll_hccl/engine/host_views.hpp"
#include "coll_hccl/engine/progress_board.hpp"

namespace hccl::engine {
namespace {

std::string boardName() {
  return "/coll_hccl_test." + std::to_string(::getpid()) + "." +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// A child process that sleeps until killed; its ProcessId comes back through a pipe.
struct Child {
  pid_t pid = -1;
  tl::ucx::ProcessId id;
  Child() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid = ::fork();
    if (pid == 0) {
      const tl::ucx::ProcessId self = tl::ucx::thisProcess();
      (void)!::write(fds[1], &self, sizeof self);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    EXPECT_EQ(::read(fds[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
    ::close(fds[0]);
  }
  void stop() {
    ::kill(pid, SIGSTOP);
    for (int i = 0; i < 200 && tl::ucx::processState(id) != 'T'; ++i) ::usleep(5000);
  }
  void end() {
    if (pid <= 0) return;
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Child() { end(); }
};

CallProgress running(std::uint32_t seq, int wait, std::uint32_t step = 1) {
  CallProgress p;
  p.comm = 7;
  p.seq = seq;
  p.coll = static_cast<std::uint8_t>(Collective::AllReduce);
  p.state = CallProgress::State::Running;
  p.wait = wait;
  p.waitRecv = true;
  p.bytes = 4096;
  p.chunks = 1;
  p.step = step;
  p.steps = 4;
  return p;
}

// Four ranks of one communicator; world rank = communicator rank; rank 0 is the failing one.
struct Fixture {
  std::string name;
  std::vector<std::unique_ptr<ProgressBoard>> boards;  // one per rank, like four processes
  std::vector<PeerProcess> world;
  std::vector<int> members{0, 1, 2, 3};
  explicit Fixture(std::string n) : name(std::move(n)) {
    for (int r = 0; r < 4; ++r) {
      std::string why;
      boards.push_back(ProgressBoard::open(name, 4, r, why));
      EXPECT_TRUE(boards.back()) << why;
      world.push_back({"vm", tl::ucx::thisProcess(), true});
    }
  }
  ~Fixture() { boards[0]->unlink(); }
  DiagnosisInput input(const CallProgress& failed) {
    DiagnosisInput in;
    in.board = boards[0].get();
    in.world = world;
    in.members = members;
    in.rank = 0;
    in.failed = failed;
    return in;
  }
};

TEST(ProgressBoard, RanksSeeEachOthersRecordsPerCommunicator) {
  Fixture f(boardName());
  CallProgress a = running(5, 2);
  f.boards[1]->publish(a);
  CallProgress other = running(9, -1);
  other.comm = 8;
  f.boards[1]->publish(other);
  const auto seen = f.boards[3]->read(1, 7);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->seq, 5u);
  EXPECT_EQ(seen->wait, 2);
  EXPECT_EQ(f.boards[3]->read(1, 8)->seq, 9u);
  EXPECT_FALSE(f.boards[3]->read(2, 7));  // rank 2 wrote nothing
  EXPECT_FALSE(f.boards[3]->read(1, 99));
  // A fifth communicator replaces the least recently written record.
  for (std::uint32_t c = 10; c < 13; ++c) {
    CallProgress p = running(1, -1);
    p.comm = c;
    f.boards[1]->publish(p);
  }
  EXPECT_FALSE(f.boards[0]->read(1, 7));
  EXPECT_TRUE(f.boards[0]->read(1, 8));
}

TEST(ProgressBoard, UnlinkLeavesNothingInDevShm) {
  const std::string name = boardName();
  std::string why;
  auto b = ProgressBoard::open(name, 2, 0, why);
  ASSERT_TRUE(b) << why;
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + name));
  b->unlink();
  b->unlink();  // every rank may
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));
  b->publish(running(1, -1));  // the mapping stays usable
  EXPECT_EQ(b->read(0, 7)->seq, 1u);
}

TEST(Diagnosis, NamesTheStoppedRankNotThePeerWaitedFor) {
  Fixture f(boardName());
  Child stopped;
  f.world[2].process = stopped.id;
  f.boards[1]->publish(running(3, 2));  // rank 1 waits for rank 2
  f.boards[2]->publish(running(3, 3, 2));
  f.boards[3]->publish(running(3, 0));
  stopped.stop();
  const Culprit c = findCulprit(f.input(running(3, 1)));  // rank 0 waited for rank 1
  EXPECT_EQ(c.rank, 2);
  EXPECT_NE(c.reason.find("rank 2 (world rank 2, host vm, pid " + std::to_string(stopped.pid)),
            std::string::npos)
      << c.reason;
  EXPECT_NE(c.reason.find("is stopped"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("call 4 (allreduce, 4096 bytes) step 3/4"), std::string::npos)
      << c.reason;
}

TEST(Diagnosis, AnExitedRankComesBeforeAStoppedOneAndAfterwardsTheFailedOnesExit) {
  Fixture f(boardName());
  Child gone, stopped, failedThenGone;
  f.world[1].process = failedThenGone.id;
  f.world[2].process = stopped.id;
  f.world[3].process = gone.id;
  CallProgress failed = running(3, 2);
  failed.state = CallProgress::State::Failed;
  f.boards[1]->publish(failed);
  f.boards[2]->publish(running(3, 0));
  f.boards[3]->publish(running(3, 0));
  stopped.stop();
  gone.end();
  failedThenGone.end();
  const Culprit c = findCulprit(f.input(running(3, 1)));
  EXPECT_EQ(c.rank, 3) << c.reason;  // rank 1 exited too, but after failing a call itself
  EXPECT_NE(c.reason.find("has exited"), std::string::npos) << c.reason;
}

TEST(Diagnosis, ARankThatHasNotEnteredTheCall) {
  Fixture f(boardName());
  f.boards[1]->publish(running(3, 3));
  CallProgress behind = running(2, -1);
  behind.state = CallProgress::State::Done;
  f.boards[2]->publish(behind);
  f.boards[3]->publish(running(3, 2));
  const Culprit c = findCulprit(f.input(running(3, 1)));
  EXPECT_EQ(c.rank, 2);
  EXPECT_NE(c.reason.find("has not entered call 4 (after call 3 (done))"), std::string::npos)
      << c.reason;
}

// Rule 3b: rank 0 read a block rank 1 withdrew when rank 1's own call failed, and rank 0 waits
// for nobody (the read was a reduce's). Rank 1 named rank 3, on another host that rank 0 cannot
// inspect: rank 0 names rank 3 too, even if rank 1's verdict is published while rank 0 looks.
TEST(Diagnosis, AWithdrawingPeersVerdictNamesTheCause) {
  Fixture f(boardName());
  f.world[3].sameHost = false;
  f.boards[1]->publish(running(3, 3));  // in the call; its verdict comes after its diagnosis
  f.boards[2]->publish(running(3, 1));
  f.boards[3]->publish(running(3, 2));
  CallProgress verdict = running(3, 3);
  verdict.state = CallProgress::State::Failed;
  verdict.culprit = 3;
  DiagnosisInput in = f.input(running(3, -1));
  in.peerFailed = true;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    f.boards[1]->publish(verdict);
  });
  const Culprit c = findCulprit(in);
  late.join();
  EXPECT_EQ(c.rank, 3) << c.reason;
  EXPECT_NE(c.reason.find("named by rank 1"), std::string::npos) << c.reason;
  // Only for a withdrawn read: a rank that timed out on its own follows its chain as before.
  in.peerFailed = false;
  in.failed = running(3, 2);
  EXPECT_EQ(findCulprit(in).reason.find("named by"), std::string::npos);
}

// The stages the engine runs without sleeping (it diagnoses under its lock): rules 1 to 3 decide
// nothing here, rule 3b finds no verdict on its first look and names the culprit on the look after
// the verdict is published, and rule 4 is what findCulprit would end with had none come.
TEST(Diagnosis, RuleThreeBLooksOnceAtATime) {
  Fixture f(boardName());
  f.world[3].sameHost = false;
  f.boards[1]->publish(running(3, 3));
  f.boards[2]->publish(running(3, 1));
  f.boards[3]->publish(running(3, 2));
  DiagnosisInput in = f.input(running(3, -1));
  in.peerFailed = true;
  EXPECT_FALSE(culpritByState(in).has_value());
  EXPECT_FALSE(culpritNamedByPeer(in).has_value()) << "no verdict yet";
  const Culprit chain = culpritByChain(in);
  EXPECT_EQ(chain.rank, -1) << chain.reason;  // rank 0 waits for nobody: nothing to follow
  CallProgress verdict = running(3, 3);
  verdict.state = CallProgress::State::Failed;
  verdict.culprit = 3;
  f.boards[1]->publish(verdict);
  const std::optional<Culprit> c = culpritNamedByPeer(in);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rank, 3) << c->reason;
  EXPECT_NE(c->reason.find("named by rank 1"), std::string::npos) << c->reason;
  // A verdict of another call, or a rank that did not have its read withdrawn, names nothing.
  in.failed = running(4, -1);
  EXPECT_FALSE(culpritNamedByPeer(in).has_value());
  in.failed = running(3, -1);
  in.peerFailed = false;
  EXPECT_FALSE(culpritNamedByPeer(in).has_value());
}

TEST(Diagnosis, TheEndOfTheWaitForChain) {
  Fixture f(boardName());
  f.boards[1]->publish(running(3, 2));
  f.boards[2]->publish(running(3, -1));  // in the call, waiting for nobody (computing)
  f.boards[3]->publish(running(3, 0));
  const Culprit c = findCulprit(f.input(running(3, 1)));
  EXPECT_EQ(c.rank, 2);
  EXPECT_NE(c.reason.find("ends at rank 2"), std::string::npos) << c.reason;
}

TEST(Diagnosis, ACycleAndARankOnAnotherHost) {
  Fixture f(boardName());
  f.boards[1]->publish(running(3, 0));
  f.boards[2]->publish(running(3, 0));
  f.boards[3]->publish(running(3, 0));
  Culprit c = findCulprit(f.input(running(3, 1)));
  EXPECT_EQ(c.rank, 0);  // the lowest of the cycle, on every member alike
  EXPECT_NE(c.reason.find("ranks 0 -> 1 -> 0 wait for each other"), std::string::npos) << c.reason;
  f.world[1].sameHost = false;
  f.world[1].host = "far";
  c = findCulprit(f.input(running(3, 1)));
  EXPECT_EQ(c.rank, 1);
  EXPECT_NE(c.reason.find("rank 1 (world rank 1, host far"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("on another host, which did not answer"), std::string::npos) << c.reason;
}

TEST(Diagnosis, NothingToNameWithoutABoardOrAWait) {
  Fixture f(boardName());
  DiagnosisInput in = f.input(running(3, -1));
  for (std::size_t r = 1; r < 4; ++r) f.boards[r]->publish(running(3, 0));
  EXPECT_EQ(findCulprit(in).rank, -1);
  in.board = nullptr;
  in.failed = running(3, 1);
  EXPECT_EQ(findCulprit(in).rank, -1);
}

// Ranks 2 and 3 on another host: what its view says decides, as it would for a rank here.
TEST(Diagnosis, AnotherHostsViewNamesItsStoppedRank) {
  Fixture f(boardName());
  f.world[2] = {"far", {4242, 99}, false};
  f.world[3] = {"far", {4343, 98}, false};
  f.boards[1]->publish(running(3, 3));
  // What the far host sends: rank 3 runs and waits for rank 2, which is stopped.
  HostView far;
  far.comm = 7;
  far.seq = 3;
  far.from = 3;
  far.board = true;
  far.ranks = {{2, 'T', true, true, false, running(3, 1)},
               {3, 'R', true, true, false, running(3, 2)}};
  std::string why;
  const std::optional<HostView> back = decode(encode(far), &why);
  ASSERT_TRUE(back) << why;
  ASSERT_EQ(back->ranks.size(), 2u);
  EXPECT_EQ(back->ranks[0].state, 'T');
  EXPECT_EQ(back->ranks[1].record.wait, 2);
  std::vector<std::optional<RankView>> remote(4);
  for (const RankView& r : back->ranks) remote[static_cast<std::size_t>(r.worldRank)] = r;
  DiagnosisInput in = f.input(running(3, 3));
  in.remote = remote;
  Culprit c = findCulprit(in);
  EXPECT_EQ(c.rank, 2) << c.reason;
  EXPECT_NE(c.reason.find("rank 2 (world rank 2, host far, pid 4242) is stopped"),
            std::string::npos)
      << c.reason;
  // Without the view, the chain ends at the far rank it waited for.
  in.remote = {};
  c = findCulprit(in);
  EXPECT_EQ(c.rank, 3) << c.reason;
  EXPECT_NE(c.reason.find("which did not answer"), std::string::npos) << c.reason;
}

// A far rank's verdict travels in its host's view: rule 3b follows it as it would a server-mate's.
TEST(HostViews, AFarRanksVerdictNamesTheCause) {
  Fixture f(boardName());
  f.world[2] = {"far", {4242, 99}, false};
  f.world[3] = {"far", {4343, 98}, false};
  f.boards[1]->publish(running(3, 0));
  CallProgress verdict = running(3, 2);
  verdict.state = CallProgress::State::Failed;
  verdict.culprit = 2;
  HostView far;
  far.comm = 7;
  far.seq = 3;
  far.from = 3;
  far.board = true;
  far.ranks = {{2, 'R', true, true, false, running(3, 3)}, {3, 'R', true, true, false, verdict}};
  std::string why;
  const std::optional<HostView> back = decode(encode(far), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->ranks[1].record.culprit, 2);
  EXPECT_EQ(back->ranks[0].record.culprit, -1);
  std::vector<std::optional<RankView>> remote(4);
  for (const RankView& r : back->ranks) remote[static_cast<std::size_t>(r.worldRank)] = r;
  DiagnosisInput in = f.input(running(3, -1));
  in.remote = remote;
  in.peerFailed = true;
  EXPECT_FALSE(culpritByState(in).has_value());
  const std::optional<Culprit> c = culpritNamedByPeer(in);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rank, 2) << c->reason;
  EXPECT_NE(c->reason.find("named by rank 3 (world rank 3, host far"), std::string::npos)
      << c->reason;
}

TEST(HostViews, MalformedViewsAreRefused) {
  HostView v;
  v.ranks.resize(2);
  std::vector<std::byte> bytes = encode(v);
  std::string why;
  EXPECT_FALSE(decode(std::span(bytes).first(10), &why));
  EXPECT_NE(why.find("shorter than"), std::string::npos) << why;
  EXPECT_FALSE(decode(std::span(bytes).first(bytes.size() - 1), &why));
  EXPECT_NE(why.find("for 2 ranks"), std::string::npos) << why;
  bytes[0] = std::byte{0};
  EXPECT_FALSE(decode(bytes, &why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
}

// ---- side-channel fan-out: which ranks a failing rank asks for other hosts' views --------------

// In-process ranks joined by side messages only: sideSend queues, and any rank's progress()
// delivers everything queued (answers included) to the receivers' handlers; a rank in `silent`
// never handles what it gets (a stopped or dead process).
struct SideFabric {
  struct Message {
    int from, to;
    std::vector<std::byte> bytes;
  };
  std::vector<Message> queue;
  std::vector<tl::Transport::SideHandler> handlers;
  std::set<int> silent;
  std::map<int, std::vector<int>> queries;  // sender -> the ranks it asked, in order
  int replies = 0;
};

class FabricTransport final : public tl::Transport {
 public:
  FabricTransport(SideFabric& f, int rank) : f_(f), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(f_.handlers.size()); }
  tl::LinkClass linkClass(int) const override { return tl::LinkClass::Roce; }
  void send(int, std::span<const tl::IoVec>, tl::Tag, tl::Completion*) override { ADD_FAILURE(); }
  void recv(int, std::span<const tl::IoVec>, tl::Tag, tl::Completion*) override { ADD_FAILURE(); }
  void cancel(tl::Completion*) override {}
  int progress() override {
    while (!f_.queue.empty()) {
      SideFabric::Message m = std::move(f_.queue.front());
      f_.queue.erase(f_.queue.begin());
      if (!f_.silent.contains(m.to) && f_.handlers[static_cast<std::size_t>(m.to)])
        f_.handlers[static_cast<std::size_t>(m.to)](m.from, m.bytes);
    }
    return 0;
  }
  bool sideSend(int peer, std::span<const std::byte> message) override {
    const std::optional<HostView> v = decode(message);
    EXPECT_TRUE(v);
    if (v && v->wantsReply)
      f_.queries[rank_].push_back(peer);
    else
      ++f_.replies;
    f_.queue.push_back({rank_, peer, {message.begin(), message.end()}});
    return true;
  }
  void setSideHandler(SideHandler h) override {
    f_.handlers[static_cast<std::size_t>(rank_)] = std::move(h);
  }

 private:
  SideFabric& f_;
  int rank_;
};

// One communicator over hosts of the given sizes (ranks numbered host by host), every rank with
// its own world view and DiagnosisChannel on the fabric.
struct Cluster {
  SideFabric fabric;
  std::vector<int> hostOf, members;
  std::vector<std::vector<PeerProcess>> worlds;
  std::vector<std::unique_ptr<FabricTransport>> links;
  std::vector<std::unique_ptr<DiagnosisChannel>> channels;
  explicit Cluster(const std::vector<int>& sizes) {
    for (std::size_t h = 0; h < sizes.size(); ++h)
      for (int i = 0; i < sizes[h]; ++i) hostOf.push_back(static_cast<int>(h));
    const int n = static_cast<int>(hostOf.size());
    fabric.handlers.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      members.push_back(r);
      std::vector<PeerProcess> world;
      for (int w = 0; w < n; ++w)
        world.push_back(
            {"host" + std::to_string(hostOf[static_cast<std::size_t>(w)]),
             {1000 + w, 0},
             hostOf[static_cast<std::size_t>(w)] == hostOf[static_cast<std::size_t>(r)]});
      worlds.push_back(std::move(world));
    }
    for (int r = 0; r < n; ++r) {
      links.push_back(std::make_unique<FabricTransport>(fabric, r));
      channels.push_back(std::make_unique<DiagnosisChannel>(
          *links.back(), nullptr, worlds[static_cast<std::size_t>(r)], r, false));
    }
  }
  // Rank r's exchange; returns the note ("k of n other hosts answered ...").
  std::string fail(int r, int lost = -1,
                   std::chrono::milliseconds budget = std::chrono::seconds(5)) {
    std::string note;
    (void)channels[static_cast<std::size_t>(r)]->gather(7, 3, members, lost, budget, note);
    return note;
  }
};

TEST(HostViews, APartnerIsChosenByTheAskersIndexOnItsHost) {
  const std::vector<int> host{10, 11, 12, 13, 14};
  EXPECT_EQ(viewPartners(host, 0, -1), (std::vector<int>{10, 11}));
  EXPECT_EQ(viewPartners(host, 4, -1), (std::vector<int>{14, 10}));
  EXPECT_EQ(viewPartners(host, 7, -1), (std::vector<int>{12, 13}));  // 7 mod 5
  EXPECT_EQ(viewPartners(host, 1, 11), (std::vector<int>{12, 13}));  // the lost one is skipped
  EXPECT_EQ(viewPartners(std::vector<int>{20}, 3, -1), (std::vector<int>{20}));
  EXPECT_EQ(viewPartners(std::vector<int>{20}, 0, 20), (std::vector<int>{20}));  // nobody else
  EXPECT_EQ(viewPartners(std::vector<int>{20, 21}, 0, 20), (std::vector<int>{21}));
}

// Each rank fails alone (a fresh cluster each time, so no view pushed earlier answers for a
// host): who it asks, how many messages that costs, and that every other host answers. Before the
// partners, a failing rank asked every rank on another host.
void expectBoundedFanOut(const std::vector<int>& sizes,
                         const std::map<int, std::vector<int>>& expectedAsked) {
  const int hosts = static_cast<int>(sizes.size());
  int n = 0;
  for (const int s : sizes) n += s;
  int queries = 0, everyRemote = 0;
  for (int r = 0; r < n; ++r) {
    Cluster c(sizes);
    const std::string note = c.fail(r);
    EXPECT_NE(note.find(std::to_string(hosts - 1) + " of " + std::to_string(hosts - 1) +
                        " other hosts answered"),
              std::string::npos)
        << "rank " << r << ": " << note;
    const std::vector<int>& asked = c.fabric.queries[r];
    // At most two per other host, at least one on each, none on its own host, each answered once.
    std::map<int, int> perHost;
    for (const int w : asked) {
      EXPECT_NE(c.hostOf[static_cast<std::size_t>(w)], c.hostOf[static_cast<std::size_t>(r)]);
      ++perHost[c.hostOf[static_cast<std::size_t>(w)]];
    }
    EXPECT_EQ(static_cast<int>(perHost.size()), hosts - 1) << "rank " << r;
    for (const auto& [h, k] : perHost) EXPECT_LE(k, 2) << "rank " << r << " host " << h;
    EXPECT_LE(static_cast<int>(asked.size()), 2 * (hosts - 1));
    EXPECT_EQ(c.fabric.replies, static_cast<int>(asked.size())) << "rank " << r;
    const auto it = expectedAsked.find(r);
    if (it != expectedAsked.end()) {
      EXPECT_EQ(asked, it->second) << "rank " << r;
    }
    queries += static_cast<int>(asked.size());
    everyRemote += n - sizes[static_cast<std::size_t>(c.hostOf[static_cast<std::size_t>(r)])];
  }
  std::printf(
      "hosts %zu, %d ranks: %d questions over the ranks failing alone (one per remote "
      "rank: %d)\n",
      sizes.size(), n, queries, everyRemote);
}

TEST(HostViews, UnevenHostsThreeAndFive) {
  // host0 = {0,1,2}, host1 = {3..7}: host0's index i asks host1[i], host1[i+1]; host1's index j
  // asks host0[j mod 3] and the next one.
  expectBoundedFanOut({3, 5}, {{0, {3, 4}}, {2, {5, 6}}, {3, {0, 1}}, {5, {2, 0}}, {7, {1, 2}}});
}

TEST(HostViews, UnevenHostsOneAndSeven) {
  // The single rank asks two of seven; the seven all ask the single rank (once each).
  expectBoundedFanOut({1, 7}, {{0, {1, 2}}, {1, {0}}, {4, {0}}, {7, {0}}});
}

TEST(HostViews, EightHostsOfEight) {
  // Rank 9 (host1, index 1) asks ranks 1 and 2 of every other host.
  expectBoundedFanOut(std::vector<int>(8, 8),
                      {{9, {1, 2, 17, 18, 25, 26, 33, 34, 41, 42, 49, 50, 57, 58}},
                       {63, {7, 0, 15, 8, 23, 16, 31, 24, 39, 32, 47, 40, 55, 48}}});
}

TEST(HostViews, AStoppedPartnerLeavesTheOtherToAnswer) {
  Cluster c({3, 5});
  c.fabric.silent = {3};  // rank 0's first partner on host1
  EXPECT_NE(c.fail(0).find("1 of 1 other hosts answered"), std::string::npos);
  EXPECT_EQ(c.fabric.queries[0], (std::vector<int>{3, 4}));
  // A lost peer is not asked: its host's next two ranks are, and only they are asked again
  // while their view shows the lost peer still there (the fabric's processes are unknown, '?').
  EXPECT_NE(c.fail(1, 4).find("1 of 1 other hosts answered"), std::string::npos);
  const std::vector<int>& asked = c.fabric.queries[1];
  ASSERT_GE(asked.size(), 2u);
  EXPECT_EQ(asked[0], 5);
  EXPECT_EQ(asked[1], 6);
  for (const int w : asked) EXPECT_TRUE(w == 5 || w == 6) << w;
}

TEST(HostViews, AHostWhoseOnlyRankIsSilentCostsOneQuestionAndTheBudget) {
  Cluster c({1, 7});
  c.fabric.silent = {0};
  const std::string note = c.fail(5, -1, std::chrono::milliseconds(20));
  EXPECT_NE(note.find("0 of 1 other hosts answered"), std::string::npos) << note;
  EXPECT_NE(note.find("no answer from host0"), std::string::npos) << note;
  EXPECT_EQ(c.fabric.queries[5], (std::vector<int>{0}));
}

}  // namespace
}  // namespace hccl::engine
