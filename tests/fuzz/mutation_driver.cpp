// A libFuzzer-compatible driver without libFuzzer, for g++ builds: the quick tier of `meson test`.
//
//   fuzz_<target> [--seconds S] [--seed N] [--max-len L] [--dict FILE] [--hang-seconds H] PATH...
//
// Runs every file under each PATH (a seed corpus, or a single input to reproduce a finding) through
// LLVMFuzzerTestOneInput, then, for S seconds, inputs made from them by random mutations: bit and
// byte changes, insertions and deletions, duplicated and spliced ranges, dictionary tokens (the
// libFuzzer .dict format) and characters that parsers get wrong (multi-byte UTF-8, bytes that are
// not UTF-8, look-alikes of ASCII punctuation). No coverage feedback: it complements, not
// replaces, the libFuzzer long tier. A watchdog reports an input that runs longer than H seconds
// as a hang. Anything that crashes, trips a sanitizer or breaks a property prints the input (as
// quoted text and hex) before the process dies.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Set by the sanitizer runtimes when present; lets the driver print the input before dying.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using Clock = std::chrono::steady_clock;

// The input being run, for the death reports. Written before each run, read only when dying.
std::string g_current;
std::atomic<std::uint64_t> g_runs{0};

void printInput(const char* why) {
  // Async-signal-safe enough for a dying process: write(2) on preformatted text.
  std::string out = std::string("\n==fuzz== ") + why + " on an input of " +
                    std::to_string(g_current.size()) + " bytes; as hex:\n";
  static const char* kHex = "0123456789abcdef";
  for (std::size_t i = 0; i < g_current.size() && i < 4096; ++i) {
    const auto b = static_cast<unsigned char>(g_current[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  out += g_current.size() > 4096 ? "...\n" : "\n";
  if (const char* dir = std::getenv("FUZZ_ARTIFACTS")) {
    const std::string path = std::string(dir) + "/crash-" + std::to_string(getpid());
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      [[maybe_unused]] const auto n = write(fd, g_current.data(), g_current.size());
      close(fd);
      out += "==fuzz== written to " + path + "\n";
    }
  }
  [[maybe_unused]] const auto n = write(2, out.data(), out.size());
}

void onDeath() {
  printInput("crash");
}

void onSignal(int sig) {
  printInput(sig == SIGABRT ? "abort (a broken property or a failed assertion)" : "fatal signal");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// libFuzzer dictionaries: lines `name="text"` or `"text"`, with \\ \" and \xNN escapes.
std::vector<std::string> readDict(const std::string& path) {
  std::vector<std::string> tokens;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const std::size_t open = line.find('"');
    const std::size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    std::string t;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          t.push_back(static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
          i += 3;
        } else {
          t.push_back(line[++i]);
        }
      } else {
        t.push_back(line[i]);
      }
    }
    tokens.push_back(t);
  }
  return tokens;
}

// Characters that parsers mishandle: multi-byte UTF-8 (2, 3, 4 bytes), look-alikes of ASCII,
// invisible characters, and bytes that are not UTF-8 (stray continuation, truncated sequence,
// overlong form, surrogate, 0xFF).
const std::vector<std::string> kTricky = {
    "\xc3\xa9",
    "\xc3\x97",
    "\xe2\x82\xac",
    "\xf0\x9f\x98\x80",
    "\xef\xbc\x9a",
    "\xef\xbc\x9b",
    "\xef\xbc\x9d",
    "\xef\xbc\x8f",
    "\xef\xbc\x91",
    "\xc2\xa0",
    "\xe2\x80\x8b",
    "\xe2\x80\xae",
    "\xef\xbb\xbf",
    "\x80",
    "\xbf",
    "\xc3",
    "\xe2\x82",
    "\xc0\xaf",
    "\xed\xa0\x80",
    "\xff",
    "\x00",
    "\n",
    "\t",
    "\x7f",
    "\\",
    "\"",
    "99999999999999999999",
    "-1",
    "1e-9",
    "0",
};

class Mutator {
 public:
  Mutator(std::uint64_t seed, std::vector<std::string> dict, std::size_t maxLen)
      : rng_(seed), dict_(std::move(dict)), maxLen_(maxLen) {}

  std::string mutate(const std::vector<std::string>& pool) {
    std::string s = pool[pick(pool.size())];
    const std::size_t rounds = 1 + pick(4);
    for (std::size_t r = 0; r < rounds; ++r) once(s, pool);
    if (s.size() > maxLen_) s.resize(maxLen_);
    return s;
  }

 private:
  std::size_t pick(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  void insert(std::string& s, const std::string& t) { s.insert(pick(s.size() + 1), t); }

  void once(std::string& s, const std::vector<std::string>& pool) {
    switch (pick(10)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // any byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 2:  // printable ASCII inserted
        insert(s, std::string(1, static_cast<char>(0x20 + pick(95))));
        break;
      case 3: {  // delete a range
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 4: {  // duplicate a range
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        const std::size_t len = 1 + pick(std::min<std::size_t>(64, s.size() - at));
        insert(s, s.substr(at, len));
        break;
      }
      case 5:
      case 6:  // a dictionary token
        if (!dict_.empty()) insert(s, dict_[pick(dict_.size())]);
        break;
      case 7:  // a tricky character
        insert(s, kTricky[pick(kTricky.size())]);
        break;
      case 8: {  // splice with another input
        const std::string& o = pool[pick(pool.size())];
        if (o.empty()) break;
        const std::size_t from = pick(o.size());
        s = s.substr(0, pick(s.size() + 1)) + o.substr(from, 1 + pick(o.size() - from));
        break;
      }
      case 9:  // truncate
        s.resize(pick(s.size() + 1));
        break;
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> dict_;
  std::size_t maxLen_;
};

void run(const std::string& input) {
  g_current = input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  g_runs.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  std::uint64_t seed = 1;
  std::size_t maxLen = 4096;
  double hangSeconds = 10;
  std::vector<std::string> dict;
  std::vector<std::string> pool;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--seconds" && more) {
      seconds = std::stod(argv[++i]);
    } else if (a == "--seed" && more) {
      seed = std::stoull(argv[++i]);
    } else if (a == "--max-len" && more) {
      maxLen = std::stoul(argv[++i]);
    } else if (a == "--hang-seconds" && more) {
      hangSeconds = std::stod(argv[++i]);
    } else if (a == "--dict" && more) {
      dict = readDict(argv[++i]);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a))
        if (e.is_regular_file()) pool.push_back(readFile(e.path()));
    } else if (std::filesystem::is_regular_file(a)) {
      pool.push_back(readFile(a));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--seconds S] [--seed N] [--max-len L] [--dict FILE] "
                   "[--hang-seconds H] CORPUS_DIR_OR_FILE...\n(unknown or missing: %s)\n",
                   argv[0], a.c_str());
      return 2;
    }
  }
  if (pool.empty()) pool.emplace_back();
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(onDeath);
  std::signal(SIGABRT, onSignal);
  std::signal(SIGSEGV, onSignal);
  std::signal(SIGFPE, onSignal);

  // The watchdog: the run counter must move at least every hangSeconds.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    std::uint64_t last = ~std::uint64_t{0};
    auto since = Clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::uint64_t now = g_runs.load(std::memory_order_relaxed);
      if (now != last) {
        last = now;
        since = Clock::now();
      } else if (Clock::now() - since > std::chrono::duration<double>(hangSeconds)) {
        printInput("hang (no return within --hang-seconds)");
        std::_Exit(3);
      }
    }
  });

  const auto start = Clock::now();
  const std::size_t seeds = pool.size();
  for (std::size_t i = 0; i < seeds; ++i) run(pool[i]);
  Mutator m(seed, dict, maxLen);
  const auto deadline = start + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    // Batches between clock reads; a bounded pool of recent inputs widens what gets mutated.
    for (int k = 0; k < 64; ++k) {
      std::string input = m.mutate(pool);
      run(input);
      if (pool.size() < seeds + 256) {
        pool.push_back(std::move(input));
      } else {
        pool[seeds + (g_runs.load() % 256)] = std::move(input);
      }
    }
  }
  done = true;
  watchdog.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%llu executions (%zu seeds) in %.1f s: 0 crashes, 0 hangs\n",
              static_cast<unsigned long long>(g_runs.load()), seeds, elapsed);
  return 0;
}
