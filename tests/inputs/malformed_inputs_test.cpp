// The malformed-input table (malformed_inputs.tsv): every row is one bad value of one setting or
// environment variable and a fragment its message must contain. Engine settings go through
// optionsFromLayers, once for every layer the adapter reads them from (info key, MCA parameter,
// environment), and the message must also name that source; tuning files through the loader the
// engine uses; topology variables through TopologySource and resolveHierarchy for a job of 4.
// The same table can be run through mpirun (tests/inputs/run_malformed_mpi.py).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "coll_hccl/engine/settings_bridge.hpp"
#include "common/utf8.hpp"
#include "topology/error.hpp"
#include "topology/rank_table.hpp"
#include "topology/resolve.hpp"

namespace {

namespace fs = std::filesystem;
constexpr std::uint32_t kJobRanks = 4;

struct Row {
  int line = 0;
  std::string setting, kind, value, fragment;
};

// \t \n \\ \xNN \u{XXXX}; anything else after a backslash is an error in the table.
std::string unescape(const std::string& in, int line) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out.push_back(in[i]);
      continue;
    }
    const char e = i + 1 < in.size() ? in[i + 1] : '\0';
    if (e == 't' || e == 'n' || e == '\\') {
      out.push_back(e == 't' ? '\t' : e == 'n' ? '\n' : '\\');
      ++i;
    } else if (e == 'x' && i + 3 < in.size()) {
      out.push_back(static_cast<char>(std::stoi(in.substr(i + 2, 2), nullptr, 16)));
      i += 3;
    } else if (e == 'u' && i + 2 < in.size() && in[i + 2] == '{') {
      const std::size_t close = in.find('}', i);
      const auto c =
          static_cast<char32_t>(std::stoul(in.substr(i + 3, close - i - 3), nullptr, 16));
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      } else {
        out.push_back(static_cast<char>(0xf0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
      }
      i = close;
    } else {
      ADD_FAILURE() << "malformed_inputs.tsv:" << line << ": unknown escape \\" << e;
    }
  }
  return out;
}

std::vector<Row> readTable() {
  const char* path = std::getenv("MALFORMED_INPUTS");
  std::ifstream in(path ? path : "tests/inputs/malformed_inputs.tsv");
  EXPECT_TRUE(in) << "set MALFORMED_INPUTS to the table";
  std::vector<Row> rows;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(text);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    if (cols.size() != 4) {
      ADD_FAILURE() << "malformed_inputs.tsv:" << line << ": expected 4 columns, got "
                    << cols.size();
      continue;
    }
    rows.push_back({line, cols[0], cols[1], unescape(cols[2], line), cols[3]});
  }
  return rows;
}

// Where the adapter reads each engine setting (coll_hccl_settings.c).
struct AdapterSetting {
  std::string_view name;
  hccl_setting_id_t id;
  const char* infoKey;
  const char* env;
};
constexpr AdapterSetting kAdapter[] = {
    {"algorithm", HCCL_SETTING_ALGORITHM, "hccl_algo", "HCCL_ALGO"},
    {"selection", HCCL_SETTING_SELECTION, nullptr, nullptr},
    {"buffsize_mb", HCCL_SETTING_BUFFSIZE_MB, "hccl_buffsize", "HCCL_BUFFSIZE"},
    {"deterministic", HCCL_SETTING_DETERMINISTIC, "hccl_deterministic", "HCCL_DETERMINISTIC"},
    {"hccs_tls", HCCL_SETTING_HCCS_TLS, nullptr, nullptr},
    {"roce_tls", HCCL_SETTING_ROCE_TLS, nullptr, nullptr},
    {"intra_roce", HCCL_SETTING_INTRA_ROCE, nullptr, "HCCL_INTRA_ROCE_ENABLE"},
    {"tuning_file", HCCL_SETTING_TUNING_FILE, nullptr, nullptr},
    {"timeout", HCCL_SETTING_TIMEOUT, nullptr, "HCCL_EXEC_TIMEOUT"},
    {"verbose", HCCL_SETTING_VERBOSE, nullptr, nullptr},
    {"level0_link", HCCL_SETTING_LEVEL0_LINK, nullptr, "COLL_HCCL_LEVEL0_LINK"},
    {"shm_slot_bytes", HCCL_SETTING_SHM_SLOT_BYTES, nullptr, "HCCL_SHM_SLOT_BYTES"},
};

const AdapterSetting* adapterSetting(std::string_view name) {
  for (const AdapterSetting& s : kAdapter)
    if (s.name == name) return &s;
  return nullptr;
}

class MalformedInputs : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hccl_malformed_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The path a file value names, prepared; `limit` is the reader's bound for @big.
  std::string pathFor(const Row& row, std::uint64_t limit) {
    const std::string& v = row.value;
    const std::string base = (dir_ / ("row" + std::to_string(row.line))).string();
    if (v == "@dir") {
      fs::create_directory(base);
    } else if (v == "@fifo") {
      EXPECT_EQ(mkfifo(base.c_str(), 0600), 0);
    } else if (v == "@missing") {
    } else if (v == "@devzero") {
      return "/dev/zero";
    } else if (v == "@big") {
      std::ofstream(base, std::ios::binary) << std::string(limit + 1, ' ');
    } else if (v.starts_with("@text:")) {
      std::ofstream(base, std::ios::binary) << v.substr(6);
    } else {
      ADD_FAILURE() << "malformed_inputs.tsv:" << row.line << ": unknown file value " << v;
    }
    return base;
  }

  fs::path dir_;
};

// What the engine says about one engine setting given at one layer: its error, or its notes.
struct Outcome {
  bool ok = false;
  std::string text;
};

Outcome throughLayer(const AdapterSetting& s, const std::string& value, const std::string& source,
                     const std::string& tuningPath) {
  hccl_setting_t layers[HCCL_SETTING_COUNT] = {};
  layers[s.id].num_layers = 1;
  layers[s.id].layers[0] = {value.c_str(), source.c_str()};
  auto r = hccl::engine::optionsFromLayers(layers);
  if (!r.ok()) return {false, r.error().message};
  if (s.id == HCCL_SETTING_TUNING_FILE) {
    std::vector<std::string> warnings;
    auto m = hccl::algo::loadTuningFile(hccl::algo::defaultCostModel(), tuningPath, warnings);
    if (!m.ok()) return {false, m.error().message};
  }
  std::string notes;
  for (const std::string& n : r.value().notes) notes += n + "\n";
  return {true, notes};
}

Outcome topology(const Row& row, const std::string& value) {
  const std::vector<hccl::topo::RankRecord> none;
  try {
    if (row.setting == "RANK_TABLE_FILE" || row.setting == "HCCL_TOPO_EMULATE") {
      hccl::topo::TopologySource src;
      (row.setting == "RANK_TABLE_FILE" ? src.rankTableFile : src.emulationSpec) = value;
      hccl::topo::resolveHierarchy(src, kJobRanks, {}, none);
    } else {
      ::setenv(row.setting.c_str(), value.c_str(), 1);
      const auto unset = [&] { ::unsetenv(row.setting.c_str()); };
      try {
        hccl::topo::TopologySource::fromEnvironment();
      } catch (...) {
        unset();
        throw;
      }
      unset();
    }
  } catch (const hccl::topo::TopologyError& e) {
    return {false, e.what()};
  }
  return {true, ""};
}

void expectOutcome(const Row& row, const std::string& through, const Outcome& got) {
  const bool wantError = row.kind == "error";
  EXPECT_EQ(got.ok, !wantError) << "malformed_inputs.tsv:" << row.line << " " << row.setting
                                << " through " << through << " = " << hccl::text::quoted(row.value)
                                << ": " << got.text;
  EXPECT_NE(got.text.find(row.fragment), std::string::npos)
      << "malformed_inputs.tsv:" << row.line << " " << row.setting << " through " << through
      << " = " << hccl::text::quoted(row.value) << "\n  expected: " << row.fragment
      << "\n  got:      " << got.text;
}

TEST_F(MalformedInputs, EveryRowGivesItsMessage) {
  const std::vector<Row> rows = readTable();
  ASSERT_GT(rows.size(), 50u);
  int checked = 0;
  for (const Row& row : rows) {
    ASSERT_TRUE(row.kind == "error" || row.kind == "note")
        << "malformed_inputs.tsv:" << row.line << ": kind " << row.kind;
    if (const AdapterSetting* s = adapterSetting(row.setting)) {
      const std::string tuningPath = s->id == HCCL_SETTING_TUNING_FILE
                                         ? pathFor(row, hccl::algo::kMaxTuningFileBytes)
                                         : std::string();
      const std::string value = tuningPath.empty() ? row.value : tuningPath;
      std::vector<std::string> sources;
      if (s->infoKey) sources.push_back(std::string("info key ") + s->infoKey);
      sources.push_back("MCA coll_hccl_" + std::string(s->name) + " (command line)");
      if (s->env) sources.push_back(std::string("env ") + s->env);
      for (const std::string& source : sources) {
        const Outcome got = throughLayer(*s, value, source, tuningPath);
        expectOutcome(row, source, got);
        // An error names where the value came from (the tuning loader names the file instead).
        if (!got.ok && s->id != HCCL_SETTING_TUNING_FILE) {
          const std::string layer = source.substr(0, source.find(" ("));
          EXPECT_NE(got.text.find("(from " + layer), std::string::npos)
              << "malformed_inputs.tsv:" << row.line << ": no source in: " << got.text;
        }
        std::cout << "  line " << row.line << " " << row.setting << " (" << source
                  << "): " << got.text << (got.text.ends_with("\n") ? "" : "\n");
        ++checked;
      }
    } else {
      const std::string value = row.setting == "RANK_TABLE_FILE"
                                    ? pathFor(row, hccl::topo::kMaxRankTableBytes)
                                    : row.value;
      const Outcome got = topology(row, value);
      expectOutcome(row, "the environment", got);
      std::cout << "  line " << row.line << " " << row.setting << ": " << got.text << "\n";
      ++checked;
    }
  }
  std::cout << rows.size() << " rows, " << checked << " checks\n";
}

}  // namespace
