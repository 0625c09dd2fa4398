// Layered settings: precedence info key > MCA > env > default, provenance of every value, blank
// values falling through, invalid values reported with their source, listings.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "algorithms/config_settings.hpp"

namespace hccl::algo {
namespace {

using Values = std::map<std::string, std::string, std::less<>>;

ConfigSources sources(Values info, Values mca, Values env) {
  return {mapLookup(std::move(info)), mapLookup(std::move(mca)), mapLookup(std::move(env))};
}

Settings resolved(const ConfigSources& s) {
  auto r = resolveSettings(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Settings{};
}

TEST(Settings, DefaultsWhenNothingIsSet) {
  for (const ConfigSources& s : {ConfigSources{}, sources({}, {}, {})}) {
    const Settings got = resolved(s);
    EXPECT_EQ(got.algo.value.form(), AlgoConfig::Form::Automatic);
    EXPECT_EQ(got.buffSizeMB.value, 200u);
    EXPECT_EQ(got.buffSizeBytes(), 200ull * 1024 * 1024);
    EXPECT_EQ(got.deterministic.value, Determinism::Off);
    EXPECT_EQ(got.selection.value, SelectionMode::Model);
    EXPECT_EQ(got.tuningFile.value, "");
    for (const Provenance& p : {got.algo.from, got.buffSizeMB.from, got.deterministic.from,
                                got.selection.from, got.tuningFile.from}) {
      EXPECT_EQ(p.layer, Layer::Default);
      EXPECT_EQ(p.str(), "default");
    }
  }
}

// Every combination of layers for every setting: the highest layer that is set wins.
TEST(Settings, PrecedenceAndProvenanceForEveryCombination) {
  struct Per {
    std::string info, mca, env;
  };
  // Distinct valid values per layer so that the winner is visible in the value too.
  const Per algo{"level1:ring", "level1:NHR", "level1:NB"};
  const Per buff{"11", "22", "33"};
  const Per det{"strict", "true", "TRUE"};
  const Per sel{"hccl_rules", "HCCL_RULES", "Hccl_Rules"};
  const Per file{"/info.json", "/mca.json", "/env.json"};
  for (int mask = 0; mask < 8; ++mask) {
    const bool hasInfo = mask & 1, hasMca = mask & 2, hasEnv = mask & 4;
    Values info, mca, env;
    if (hasInfo) {
      info = {{"hccl_algo", algo.info},
              {"hccl_buffsize", buff.info},
              {"hccl_deterministic", det.info},
              {"hccl_selection", sel.info},
              {"hccl_tuning_file", file.info}};
    }
    if (hasMca) {
      mca = {{"coll_hccl_algorithm", algo.mca},
             {"coll_hccl_buffsize_mb", buff.mca},
             {"coll_hccl_deterministic", det.mca},
             {"coll_hccl_selection", sel.mca},
             {"coll_hccl_tuning_file", file.mca}};
    }
    if (hasEnv) {
      env = {{"HCCL_ALGO", algo.env},
             {"HCCL_BUFFSIZE", buff.env},
             {"HCCL_DETERMINISTIC", det.env},
             {"COLL_HCCL_SELECTION", sel.env},
             {"COLL_HCCL_TUNING_FILE", file.env}};
    }
    const Settings got = resolved(sources(info, mca, env));
    const auto pick = [&](const Per& p, const std::string& dflt) {
      return hasInfo ? p.info : hasMca ? p.mca : hasEnv ? p.env : dflt;
    };
    const auto from = [&](const char* infoKey, const char* mcaParam, const char* envVar) {
      return hasInfo  ? std::string("info key ") + infoKey
             : hasMca ? std::string("MCA ") + mcaParam
             : hasEnv ? std::string("env ") + envVar
                      : std::string("default");
    };
    SCOPED_TRACE("mask " + std::to_string(mask));
    EXPECT_EQ(got.algo.value, parseHcclAlgo(pick(algo, "")).value());
    EXPECT_EQ(got.algo.from.str(), from("hccl_algo", "coll_hccl_algorithm", "HCCL_ALGO"));
    EXPECT_EQ(got.buffSizeMB.value, std::stoul(pick(buff, "200")));
    EXPECT_EQ(got.buffSizeMB.from.str(),
              from("hccl_buffsize", "coll_hccl_buffsize_mb", "HCCL_BUFFSIZE"));
    EXPECT_EQ(got.deterministic.value, hasInfo              ? Determinism::Strict
                                       : (hasMca || hasEnv) ? Determinism::On
                                                            : Determinism::Off);
    EXPECT_EQ(got.deterministic.from.str(),
              from("hccl_deterministic", "coll_hccl_deterministic", "HCCL_DETERMINISTIC"));
    EXPECT_EQ(got.selection.value, mask ? SelectionMode::HcclRules : SelectionMode::Model);
    EXPECT_EQ(got.selection.from.str(),
              from("hccl_selection", "coll_hccl_selection", "COLL_HCCL_SELECTION"));
    EXPECT_EQ(got.tuningFile.value, pick(file, ""));
    EXPECT_EQ(got.tuningFile.from.str(),
              from("hccl_tuning_file", "coll_hccl_tuning_file", "COLL_HCCL_TUNING_FILE"));
  }
}

TEST(Settings, BlankValuesFallThrough) {
  const Settings got = resolved(sources({{"hccl_buffsize", ""}, {"hccl_algo", "  "}},
                                        {{"coll_hccl_buffsize_mb", " \t"}},
                                        {{"HCCL_BUFFSIZE", "300"}, {"HCCL_ALGO", "level1:NHR"}}));
  EXPECT_EQ(got.buffSizeMB.value, 300u);
  EXPECT_EQ(got.buffSizeMB.from, (Provenance{Layer::Env, "HCCL_BUFFSIZE"}));
  EXPECT_EQ(got.algo.value.forced(OpType::AllReduce, 1), Algorithm::NHR);
  EXPECT_EQ(got.algo.from.str(), "env HCCL_ALGO");
}

TEST(Settings, InvalidHigherLayerIsAnErrorWithItsSource) {
  {
    const auto r =
        resolveSettings(sources({{"hccl_algo", "level1:rng"}}, {}, {{"HCCL_ALGO", "level1:ring"}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().source, "info key hccl_algo");
    EXPECT_EQ(r.error().token, "rng");
    EXPECT_EQ(r.error().position, 8u);
    EXPECT_EQ(r.error().message,
              "HCCL_ALGO: unknown algorithm \"rng\" at position 8 (level1); valid: ring, H-D_R, "
              "NHR, NHR_V1, NB, AHC, AHC_BROKE, pipeline, pairwise, fullmesh, fullmesh_push, NA, "
              "null (from info "
              "key hccl_algo)");
  }
  {
    const auto r =
        resolveSettings(sources({}, {{"coll_hccl_buffsize_mb", "0"}}, {{"HCCL_BUFFSIZE", "100"}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().source, "MCA coll_hccl_buffsize_mb");
    EXPECT_EQ(r.error().message,
              "HCCL_BUFFSIZE: value \"0\" at position 1 is too small; valid: an integer number of "
              "MB from 1 to 4294967295 (default 200) (from MCA coll_hccl_buffsize_mb)");
  }
  {
    const auto r = resolveSettings(sources({}, {}, {{"HCCL_DETERMINISTIC", "maybe"}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().source, "env HCCL_DETERMINISTIC");
    EXPECT_EQ(r.error().setting, "HCCL_DETERMINISTIC");
  }
  {
    const auto r = resolveSettings(sources({{"hccl_selection", "fastest"}}, {}, {}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().source, "info key hccl_selection");
  }
}

// A lower layer is never read when a higher one is set, so its mistakes do not matter.
TEST(Settings, ShadowedLowerLayersAreNotParsed) {
  const Settings got =
      resolved(sources({{"hccl_algo", "level1:ring"}}, {{"coll_hccl_algorithm", "garbage"}},
                       {{"HCCL_ALGO", "level1:rng"}, {"HCCL_BUFFSIZE", "77"}}));
  EXPECT_EQ(got.algo.from.str(), "info key hccl_algo");
  EXPECT_EQ(got.buffSizeMB.value, 77u);
}

TEST(Settings, EnvironmentLookupReadsTheProcessEnvironment) {
  const char* var = "COLL_HCCL_CONFIG_SETTINGS_TEST_VARIABLE";
  const Lookup env = environmentLookup();
  ::unsetenv(var);
  EXPECT_EQ(env(var), std::nullopt);
  ::setenv(var, "level1:H-D_R", 1);
  EXPECT_EQ(env(var), "level1:H-D_R");
  ::unsetenv(var);
}

TEST(Settings, LayersWithoutALookupAreSkipped) {
  ConfigSources only;
  only.env = mapLookup({{"HCCL_BUFFSIZE", "64"}});
  const Settings got = resolved(only);
  EXPECT_EQ(got.buffSizeMB.value, 64u);
  EXPECT_EQ(got.buffSizeMB.from.str(), "env HCCL_BUFFSIZE");
}

TEST(Settings, DescribeListsValueAndSource) {
  const Settings got =
      resolved(sources({{"hccl_algo", "allreduce=level1:ring"}},
                       {{"coll_hccl_deterministic", "strict"}}, {{"HCCL_BUFFSIZE", "512"}}));
  std::vector<std::string> lines;
  for (const SettingLine& l : describe(got)) lines.push_back(l.str());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "algo = allreduce=level0:NA;level1:ring (info key hccl_algo)",
                       "buffsize = 512 MB (env HCCL_BUFFSIZE)",
                       "deterministic = strict (MCA coll_hccl_deterministic)",
                       "selection = model (default)",
                       "tuning_file = none (default)",
                   }));
  EXPECT_EQ(describe(Settings{})[0].str(), "algo = automatic (default)");
}

TEST(Settings, CanonicalIgnoresSourcesButNotValues) {
  const Settings a = resolved(sources({{"hccl_algo", "level1:ring"}}, {}, {}));
  const Settings b = resolved(sources({}, {}, {{"HCCL_ALGO", " level0:NA ; level1:ring "}}));
  const Settings c = resolved(sources({}, {}, {{"HCCL_ALGO", "level1:NHR"}}));
  EXPECT_EQ(canonical(a), canonical(b));
  EXPECT_NE(canonical(a), canonical(c));
  EXPECT_EQ(canonical(a),
            "algo=level0:NA;level1:ring|buffsize=200|deterministic=false|selection=model|"
            "tuning_file=");
}

TEST(Settings, KeysTableNamesEverySetting) {
  std::vector<std::string> names;
  for (const SettingKeys& k : settingKeys()) names.emplace_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"algo", "buffsize", "deterministic", "selection",
                                             "tuning_file"}));
}

}  // namespace
}  // namespace hccl::algo
