// The progress board (shared memory between ranks of a host) and the culprit rules of fault
// diagnosis, with real processes: a stopped child, an exited child, and this process as the
// running ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
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

}  // namespace
}  // namespace hccl::engine
