#include "bench/plot.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bench {

namespace {

// A gnuplot single-quoted string: a quote inside is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string sideTitle(char letter, const std::string& label) {
  return quoted(fmt::format("{}: {}", letter, label));
}

bool inPath(const char* program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool looksLikePng(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in && std::memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0;
}

}  // namespace

std::string plotScript(const RunInfo& run, const Options& o, const std::vector<Row>& rows) {
  std::vector<std::pair<char, std::string>> sides = {{'A', o.labelA}, {'B', o.labelB}};
  for (std::size_t k = 0; k < o.alsoLabels.size(); ++k) {
    sides.emplace_back(static_cast<char>('C' + k), o.alsoLabels[k]);
  }
  std::string s;
  std::size_t panels = 0;
  for (Coll c : o.collectives) {
    std::string data;
    for (const Row& row : rows) {
      // Both axes are logarithmic: a row without bytes (barrier) has no place on them.
      if (row.coll != c || row.shape.bytes == 0) continue;
      data += fmt::format("{}", row.shape.bytes);
      std::vector<const SideResult*> all = {&row.a, &row.b};
      for (const auto& other : row.others) all.push_back(&other);
      for (const SideResult* side : all) {
        const SideSummary sum = summarize(*side, row.shape);
        data += fmt::format(" {:.6g} {:.6g}", sum.timeUs, sum.busbw);
      }
      data += "\n";
    }
    if (data.empty()) continue;
    s += fmt::format("${} << EOD\n# size, then time(us) busbw(GB/s) per side\n{}EOD\n", name(c),
                     data);
    ++panels;
  }
  if (panels == 0) return {};
  std::string head =
      fmt::format("set terminal pngcairo noenhanced size 1400,{} font 'sans,10'\nset output {}\n",
                  60 + 400 * panels, quoted(o.plotPath));
  head += fmt::format(
      "set multiplot layout {},2 title {}\n", panels,
      quoted(fmt::format("hccl_bench: np {} on {} host(s), {} {}, {} pair(s) per size, medians "
                         "({})",
                         run.nranks, run.hosts.hosts, o.type->name, o.op->name, o.pairs,
                         run.started)));
  head +=
      "set logscale x 2\nset format x '%.0b%B'\nset xlabel 'size (bytes)'\nset grid\n"
      "set key left top\n";
  std::string body;
  for (Coll c : o.collectives) {
    if (s.find(fmt::format("${} <<", name(c))) == std::string::npos) continue;
    auto lines = [&](int column) {
      std::string out;
      for (std::size_t k = 0; k < sides.size(); ++k) {
        out += fmt::format("{}${} using 1:{} with linespoints title {}", k == 0 ? "" : ", ",
                           name(c), 2 + 2 * k + static_cast<std::size_t>(column),
                           sideTitle(sides[k].first, sides[k].second));
      }
      return out;
    };
    body += fmt::format("set title {}\nset ylabel 'time per call (us)'\nset logscale y\nplot {}\n",
                        quoted(fmt::format("{}: time", name(c))), lines(0));
    body += fmt::format(
        "set title {}\nset ylabel 'bus bandwidth (GB/s)'\nunset logscale y\nset yrange [0:*]\n"
        "plot {}\nset autoscale y\n",
        quoted(fmt::format("{}: busbw", name(c))), lines(1));
  }
  return s + head + body + "unset multiplot\n";
}

std::string renderPlot(const std::string& script, const std::string& pngPath) {
  const std::string gp = pngPath.substr(0, pngPath.size() - 4) + ".gp";
  {
    std::ofstream out(gp);
    out << script;
    if (!out) return fmt::format("not written: cannot write {}", gp);
  }
  if (!inPath("gnuplot")) {
    return fmt::format(
        "not drawn: gnuplot is not installed (Debian: apt-get install gnuplot-nox); the script "
        "with the data is {}",
        gp);
  }
  std::error_code ignored;
  std::filesystem::remove(pngPath, ignored);
  pid_t pid = 0;
  const char* argv[] = {"gnuplot", gp.c_str(), nullptr};
  if (::posix_spawnp(&pid, "gnuplot", nullptr, nullptr, const_cast<char* const*>(argv), environ) !=
      0) {
    return fmt::format("not drawn: gnuplot could not be started ({})", std::strerror(errno));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !looksLikePng(pngPath)) {
    return fmt::format("not drawn: gnuplot failed on {} (status {})", gp, status);
  }
  return fmt::format("written to {} (gnuplot script {})", pngPath, gp);
}

}  // namespace bench
