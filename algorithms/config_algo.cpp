#include "algorithms/config_algo.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <span>
#include <utility>

#include "algorithms/config_text.hpp"
#include "common/utf8.hpp"

namespace hccl::algo {
namespace {

constexpr std::array<std::string_view, kNumOpTypes> kOpNames = {
    "allreduce", "allgather", "reducescatter", "broadcast",      "reduce",    "scatter",
    "alltoall",  "gather",    "send",          "receive",        "sendrecv",  "barrier",
    "scan",      "exscan",    "allgatherv",    "reducescatterv", "alltoallv", "alltoallvc",
};
constexpr std::string_view kOthers = "others";
constexpr std::string_view kNA = "NA";
constexpr std::string_view kNull = "null";

// What HCCL_ALGO can name, in HCCL's documentation order, then coll_hccl's own forced-only
// fullmesh_push (mesh_push.cpp). Star has no grammar name: HCCL picks it at level0 on its own.
constexpr std::array<Algorithm, 11> kNamedAlgorithms = {
    Algorithm::Ring,     Algorithm::Rhd,  Algorithm::NHR,       Algorithm::NHR_V1,
    Algorithm::NB,       Algorithm::AHC,  Algorithm::AHC_Broke, Algorithm::Pipeline,
    Algorithm::Pairwise, Algorithm::Mesh, Algorithm::MeshPush,
};

constexpr std::array<std::string_view, kNumAlgoLevels> kLevelNames = {"level0", "level1", "level2",
                                                                      "level3"};

// Every algorithm word, NA and null last: the lookup table and the "valid:" list of messages.
const std::vector<std::string_view>& algorithmWords() {
  static const std::vector<std::string_view> words = [] {
    std::vector<std::string_view> w;
    for (Algorithm a : kNamedAlgorithms) w.push_back(hcclName(a));
    w.push_back(kNA);
    w.push_back(kNull);
    return w;
  }();
  return words;
}

const std::vector<std::string_view>& opKeyWords() {
  static const std::vector<std::string_view> words = [] {
    std::vector<std::string_view> w(kOpNames.begin(), kOpNames.begin() + kNumOpKeys);
    w.push_back(kOthers);
    return w;
  }();
  return words;
}

std::string joined(std::span<const std::string_view> words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

constexpr std::string_view kLevelListShape = "levelN:<algo> entries separated by \";\"";
constexpr std::string_view kEitherForm =
    "either one global entry levelN:<algo>;... or per-op entries <op>=levelN:<algo>;... separated "
    "by \"/\"";

std::optional<std::size_t> indexOf(std::span<const std::string_view> words, std::string_view w) {
  for (std::size_t i = 0; i < words.size(); ++i)
    if (words[i] == w) return i;
  return std::nullopt;
}

// Names are case-sensitive; say so when that is the only thing wrong.
std::string caseHint(std::span<const std::string_view> words, std::string_view w) {
  for (std::string_view candidate : words)
    if (equalsIgnoringCase(candidate, w))
      return fmt::format("; names are case-sensitive: did you mean \"{}\"?", candidate);
  return {};
}

struct Range {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool empty() const { return begin == end; }
};

struct ParseFailure {
  ConfigError error;
};

}  // namespace

std::string_view name(OpType op) {
  return kOpNames[static_cast<std::size_t>(op)];
}

OpType configuredBy(OpType op) {
  switch (op) {
    case OpType::AllGatherV:
      return OpType::AllGather;
    case OpType::ReduceScatterV:
      return OpType::ReduceScatter;
    case OpType::AllToAllV:
    case OpType::AllToAllVC:
      return OpType::AllToAll;
    default:
      return op;
  }
}

OpType opType(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return OpType::AllReduce;
    case Collective::ReduceScatter:
      return OpType::ReduceScatter;
    case Collective::AllGather:
      return OpType::AllGather;
    case Collective::Broadcast:
      return OpType::Broadcast;
    case Collective::Reduce:
      return OpType::Reduce;
    case Collective::Scatter:
      return OpType::Scatter;
    case Collective::AllToAll:
      return OpType::AllToAll;
    case Collective::Gather:
      return OpType::Gather;
    case Collective::AllToAllV:
      return OpType::AllToAllV;
    case Collective::Barrier:
      return OpType::Barrier;
    case Collective::Scan:
      return OpType::Scan;
    case Collective::Exscan:
      return OpType::Exscan;
  }
  return OpType::AllReduce;  // unreachable: the switch covers every Collective (-Wswitch)
}

std::optional<Collective> collective(OpType op) {
  if (op == OpType::AllToAllV || op == OpType::AllToAllVC) return Collective::AllToAllV;
  switch (configuredBy(op)) {
    case OpType::AllReduce:
      return Collective::AllReduce;
    case OpType::AllGather:
      return Collective::AllGather;
    case OpType::ReduceScatter:
      return Collective::ReduceScatter;
    case OpType::Broadcast:
      return Collective::Broadcast;
    case OpType::Reduce:
      return Collective::Reduce;
    case OpType::Scatter:
      return Collective::Scatter;
    case OpType::AllToAll:
      return Collective::AllToAll;
    case OpType::Gather:
      return Collective::Gather;
    case OpType::Barrier:
      return Collective::Barrier;
    case OpType::Scan:
      return Collective::Scan;
    case OpType::Exscan:
      return Collective::Exscan;
    default:
      return std::nullopt;  // send, receive, sendrecv
  }
}

const LevelAlgos* AlgoConfig::entryFor(OpType op) const {
  switch (form_) {
    case Form::Automatic:
      return nullptr;
    case Form::Global:
      return &global_;
    case Form::PerOp:
      break;
  }
  const auto& own = perOp_[static_cast<std::size_t>(configuredBy(op))];
  if (own) return &*own;
  return others_ ? &*others_ : nullptr;
}

std::optional<Algorithm> AlgoConfig::forced(OpType op, int level) const {
  if (level < 0 || level >= kNumAlgoLevels) return std::nullopt;
  const LevelAlgos* entry = entryFor(op);
  return entry ? (*entry)[static_cast<std::size_t>(level)] : std::nullopt;
}

std::optional<Algorithm> AlgoConfig::forced(Collective c, int level) const {
  return forced(opType(c), level);
}

bool AlgoConfig::hasOwnEntry(OpType op) const {
  return form_ == Form::PerOp && perOp_[static_cast<std::size_t>(configuredBy(op))].has_value();
}

bool AlgoConfig::forcesAnything() const {
  for (int op = 0; op < kNumOpTypes; ++op)
    for (int level = 0; level < kNumAlgoLevels; ++level)
      if (forced(static_cast<OpType>(op), level)) return true;
  return false;
}

namespace {
std::string levelsText(const LevelAlgos& levels) {
  std::string out = fmt::format("{}:{}", kLevelNames[0], levels[0] ? hcclName(*levels[0]) : kNA);
  for (std::size_t level = 1; level < levels.size(); ++level)
    if (levels[level]) out += fmt::format(";{}:{}", kLevelNames[level], hcclName(*levels[level]));
  return out;
}
}  // namespace

std::string AlgoConfig::str() const {
  switch (form_) {
    case Form::Automatic:
      return {};
    case Form::Global:
      return levelsText(global_);
    case Form::PerOp:
      break;
  }
  std::vector<std::string> entries;
  for (std::size_t key = 0; key < perOp_.size(); ++key)
    if (perOp_[key])
      entries.push_back(fmt::format("{}={}", kOpNames[key], levelsText(*perOp_[key])));
  if (others_) entries.push_back(fmt::format("{}={}", kOthers, levelsText(*others_)));
  return fmt::format("{}", fmt::join(entries, "/"));
}

// Reads one HCCL_ALGO value. Internal failures are thrown as ParseFailure and caught in
// parseHcclAlgo(), so that no exception leaves the API.
class HcclAlgoParser {
 public:
  explicit HcclAlgoParser(std::string_view value) : text_(stripSpaces(value)) {}

  AlgoConfig run() {
    AlgoConfig config;
    if (text_.s.empty()) return config;
    const std::vector<Range> segments = split({0, text_.s.size()}, '/');
    std::vector<bool> perOp;
    for (const Range& seg : segments) perOp.push_back(classify(seg));
    for (std::size_t i = 1; i < segments.size(); ++i) {
      if (perOp[i] != perOp[0]) {
        fail(segments[i], text_.posOf(segments[i].begin),
             fmt::format("{} entry {} at position {} mixed with {}; valid: {}",
                         perOp[i] ? "per-op" : "global", quoted(segments[i]),
                         text_.posOf(segments[i].begin),
                         perOp[i] ? "a global entry" : "per-op entries", kEitherForm));
      }
    }
    if (!perOp[0]) {
      if (segments.size() > 1) {
        const Range& second = segments[1];
        fail(second, text_.posOf(second.begin),
             fmt::format("second global entry {} at position {}; valid: {}", quoted(second),
                         text_.posOf(second.begin), kEitherForm));
      }
      config.form_ = AlgoConfig::Form::Global;
      config.global_ = levels(segments[0], std::nullopt, config.notes_);
      return config;
    }
    config.form_ = AlgoConfig::Form::PerOp;
    std::array<std::size_t, kNumOpKeys + 1> seenAt{};  // position of each key's entry; last: others
    for (const Range& seg : segments) perOpEntry(seg, seenAt, config);
    return config;
  }

 private:
  // True for a per-op entry (it has '='). An entry that starts with an op name but lacks '=' is
  // reported here, because the global reading ("unknown level allreduce") would mislead.
  bool classify(Range seg) const {
    const std::string_view s = view(seg);
    if (s.find('=') != std::string_view::npos) return true;
    std::size_t longest = 0;
    for (std::string_view op : opKeyWords())
      if (s.starts_with(op)) longest = std::max(longest, op.size());
    if (longest > 0) {
      const std::size_t gap = seg.begin + longest;
      fail(
          seg, text_.posAfter(gap),
          fmt::format("missing \"=\" after op \"{}\" at position {}; valid: <op>=levelN:<algo>;...",
                      s.substr(0, longest), text_.posAfter(gap)));
    }
    return false;
  }

  void perOpEntry(Range seg, std::array<std::size_t, kNumOpKeys + 1>& seenAt, AlgoConfig& config) {
    const std::size_t eq = seg.begin + view(seg).find('=');
    const Range opRange{seg.begin, eq};
    if (opRange.empty()) {
      fail(seg, text_.posOf(eq),
           fmt::format("missing op before \"=\" at position {}; valid: {}", text_.posOf(eq),
                       joined(opKeyWords())));
    }
    const std::string_view op = view(opRange);
    const std::size_t opPos = text_.posOf(opRange.begin);
    const auto key = indexOf(opKeyWords(), op);
    if (!key) {
      fail(opRange, opPos,
           fmt::format("unknown op {} at position {}; valid: {}{}{}{}", quoted(opRange), opPos,
                       joined(opKeyWords()), caseHint(opKeyWords(), op), variantHint(op),
                       hint(opRange)));
    }
    if (seenAt[*key] != 0) {
      fail(opRange, opPos,
           fmt::format("duplicated op {} at position {} (first at position {}); valid: each op at "
                       "most once",
                       quoted(opRange), opPos, seenAt[*key]));
    }
    seenAt[*key] = opPos;
    const Range body{eq + 1, seg.end};
    if (body.empty()) {
      fail(seg, text_.posAfter(body.begin),
           fmt::format("missing levels after \"{}=\" at position {}; valid: {}", op,
                       text_.posAfter(body.begin), kLevelListShape));
    }
    const bool others = *key == kNumOpKeys;
    LevelAlgos parsed = levels(body, op, config.notes_);
    // send, receive and sendrecv are keys HCCL's code reads; no collective of this
    // library has these op types, so their entries are accepted (as HCCL does) and said to be
    // without effect.
    if (!others && !collective(static_cast<OpType>(*key))) {
      config.notes_.push_back(fmt::format(
          "HCCL_ALGO: the entry for op \"{}\" at position {} has no effect: coll_hccl has no {} "
          "collective (HCCL accepts the key; it configures nothing here)",
          op, opPos, op));
    }
    if (others) {
      config.others_ = parsed;
    } else {
      config.perOp_[*key] = parsed;
    }
  }

  static std::string variantHint(std::string_view op) {
    for (int i = kNumOpKeys; i < kNumOpTypes; ++i) {
      const auto variant = static_cast<OpType>(i);
      if (name(variant) == op)
        return fmt::format("; {} has no key of its own and follows \"{}\"", op,
                           name(configuredBy(variant)));
    }
    return {};
  }

  // A ";"-separated level list. `op` is the per-op key, nullopt for the global entry.
  LevelAlgos levels(Range r, std::optional<std::string_view> op, std::vector<std::string>& notes) {
    const std::vector<Range> items = split(r, ';');
    if (items.size() > static_cast<std::size_t>(kNumAlgoLevels)) {
      const Range& extra = items[kNumAlgoLevels];
      fail(extra, text_.posOf(extra.begin),
           fmt::format("more than {} levels: entry {} {} at position {}; valid: at most {} "
                       "entries, {}..{} each once",
                       kNumAlgoLevels, kNumAlgoLevels + 1, quoted(extra), text_.posOf(extra.begin),
                       kNumAlgoLevels, kLevelNames.front(), kLevelNames.back()));
    }
    LevelAlgos result{};
    std::array<std::size_t, kNumAlgoLevels> setAt{};
    for (const Range& item : items) {
      const auto [level, algo] = levelEntry(item, op);
      const auto l = static_cast<std::size_t>(level);
      if (setAt[l] != 0) {
        const std::size_t at = text_.posOf(item.begin);
        fail(Range{item.begin, item.begin + kLevelNames[l].size()}, at,
             fmt::format("duplicated level \"{}\" at position {} (first at position {}); valid: "
                         "each of {} at most once",
                         kLevelNames[l], at, setAt[l], joined(kLevelNames)));
      }
      setAt[l] = text_.posOf(item.begin);
      result[l] = algo;
    }
    // HCCL: level1 AHC spans level2 too, whatever level2 says.
    if (result[1] == Algorithm::AHC || result[1] == Algorithm::AHC_Broke) {
      if (result[2] && result[2] != result[1]) {
        notes.push_back(fmt::format(
            "HCCL_ALGO: level2:{} at position {} has no effect: level1:{} also runs level2{}",
            hcclName(*result[2]), setAt[2], hcclName(*result[1]),
            op ? fmt::format(" (op {})", *op) : std::string{}));
      }
      result[2] = result[1];
    }
    // HCCL's grammar reserves level3 and accepts an algorithm there; nothing runs at a fourth
    // level, in HCCL or here. Accepted like HCCL does, but said.
    if (result[3]) {
      notes.push_back(fmt::format(
          "HCCL_ALGO: level3:{} at position {} has no effect: level3 is reserved (no hierarchy "
          "has a fourth level; level0 is inside a server, level1 between servers, level2 between "
          "supernodes){}",
          hcclName(*result[3]), setAt[3], op ? fmt::format(" (op {})", *op) : std::string{}));
    }
    return result;
  }

  struct LevelEntry {
    int level;
    std::optional<Algorithm> algo;
  };

  LevelEntry levelEntry(Range item, std::optional<std::string_view> op) const {
    const std::string_view s = view(item);
    const std::size_t itemPos = text_.posOf(item.begin);
    if (const std::size_t eq = s.find('='); eq != std::string_view::npos) {
      const std::size_t at = text_.posOf(item.begin + eq);
      fail(
          item, at,
          fmt::format("unexpected \"=\" in {} at position {}; valid: per-op entries separated by "
                      "\"/\", as in allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:NHR",
                      quoted(item), at));
    }
    const std::size_t colonOffset = s.find(':');
    if (colonOffset == std::string_view::npos) {
      fail(item, itemPos,
           fmt::format("missing \":\" in {} at position {}; valid: levelN:<algo> with levelN one "
                       "of {}{}",
                       quoted(item), itemPos, joined(kLevelNames), hint(item)));
    }
    const std::size_t colon = item.begin + colonOffset;
    const Range levelRange{item.begin, colon};
    const Range algoRange{colon + 1, item.end};
    if (levelRange.empty()) {
      fail(item, itemPos,
           fmt::format("missing level before \":\" in {} at position {}; valid: {}", quoted(item),
                       itemPos, joined(kLevelNames)));
    }
    const std::string_view levelWord = view(levelRange);
    const auto level = indexOf(kLevelNames, levelWord);
    if (!level) {
      fail(
          levelRange, itemPos,
          fmt::format("unknown level {} at position {}; valid: {}{}{}", quoted(levelRange), itemPos,
                      joined(kLevelNames), caseHint(kLevelNames, levelWord), hint(levelRange)));
    }
    const std::string where = op ? fmt::format("{} of {}", levelWord, *op) : std::string(levelWord);
    if (algoRange.empty()) {
      const std::size_t at = text_.posAfter(algoRange.begin);
      fail(item, at,
           fmt::format("missing algorithm after \"{}:\" at position {} ({}); valid: {}", levelWord,
                       at, where, joined(algorithmWords())));
    }
    const std::string_view algoWord = view(algoRange);
    const std::size_t algoPos = text_.posOf(algoRange.begin);
    const auto index = indexOf(algorithmWords(), algoWord);
    if (!index) {
      fail(algoRange, algoPos,
           fmt::format("unknown algorithm {} at position {} ({}); valid: {}{}{}", quoted(algoRange),
                       algoPos, where, joined(algorithmWords()),
                       caseHint(algorithmWords(), algoWord), hint(algoRange)));
    }
    if (op && *level == 0 && algoWord == kNull) {
      const std::span<const std::string_view> allButNull(algorithmWords().data(),
                                                         algorithmWords().size() - 1);
      fail(algoRange, algoPos,
           fmt::format("\"null\" at position {} is not allowed for {}; valid for a per-op level0: "
                       "{}",
                       algoPos, where, joined(allButNull)));
    }
    const int levelIndex = static_cast<int>(*level);
    if (*index >= kNamedAlgorithms.size()) return {levelIndex, std::nullopt};  // NA, null
    return {levelIndex, kNamedAlgorithms[*index]};
  }

  // Splits r at `sep`; leading, trailing and doubled separators are errors.
  std::vector<Range> split(Range r, char sep) const {
    const std::string sepText(1, sep);
    const std::string valid = sep == '/' ? "<op>=levelN:<algo>;... entries separated by \"/\""
                                         : std::string(kLevelListShape);
    if (text_.s[r.begin] == sep) {
      fail(Range{r.begin, r.begin + 1}, text_.posOf(r.begin),
           fmt::format("leading separator \"{}\" at position {}; valid: {}", sepText,
                       text_.posOf(r.begin), valid));
    }
    std::vector<Range> out;
    std::size_t start = r.begin;
    for (std::size_t i = r.begin; i < r.end; ++i) {
      if (text_.s[i] != sep) continue;
      if (i == start) {
        fail(Range{i - 1, i + 1}, text_.posOf(i - 1),
             fmt::format("empty segment \"{}{}\" at position {}; valid: {}", sepText, sepText,
                         text_.posOf(i - 1), valid));
      }
      if (i + 1 == r.end) {
        fail(Range{i, i + 1}, text_.posOf(i),
             fmt::format("trailing separator \"{}\" at position {}; valid: {}", sepText,
                         text_.posOf(i), valid));
      }
      out.push_back({start, i});
      start = i + 1;
    }
    out.push_back({start, r.end});
    return out;
  }

  std::string_view view(Range r) const { return text_.view(r.begin, r.end); }
  std::string quoted(Range r) const { return quote(view(r)); }
  std::string hint(Range r) const { return nonAsciiHint(text_, r.begin, r.end); }

  [[noreturn]] void fail(Range token, std::size_t position, std::string message) const {
    throw ParseFailure{ConfigError{.setting = "HCCL_ALGO",
                                   .token = std::string(view(token)),
                                   .position = position,
                                   .message = "HCCL_ALGO: " + std::move(message),
                                   .source = {}}};
  }

  StrippedText text_;
};

// HCCL_ALGO grammar (HCCL's src/common/alg_env_config.cc and its user guide):
//
//   HCCL_ALGO := global | perop ("/" perop)*
//   global    := lvl (";" lvl)*                    at most 4 lvl
//   perop     := op "=" lvl (";" lvl)*             at most 4 lvl
//   lvl       := ("level0" | "level1" | "level2" | "level3") ":" algo
//   algo      := NA | null | ring | H-D_R | NHR | NHR_V1 | NB | AHC | AHC_BROKE | pipeline
//              | pairwise | fullmesh
//   op        := allreduce | allgather | reducescatter | broadcast | reduce | scatter | alltoall
//              | gather | send | receive | sendrecv | barrier | scan | exscan | others
//
// gather, send, receive and sendrecv are keys HCCL's code reads but its guide does not list;
// barrier, scan and exscan are coll_hccl's own (HCCL has no such op types); a configuration
// written for HCCL never names them and others= reaches them as it reaches every op.
//
// Spaces (and tabs) anywhere are ignored; names are case-sensitive; a value that is empty once the
// spaces are gone means "automatic". level0 is inside a server, level1 between servers, level2
// between supernodes.
//
// Semantics:
//   - NA and null mean "select this level automatically", like a level left out. A per-op level0
//     may not be null (HCCL rejects it; the global level0 may).
//   - "others=" applies to every op without an entry of its own, in any position.
//   - allgather also configures AllGatherV, reducescatter ReduceScatterV, alltoall AlltoAllV and
//     AlltoAllVC; these have no key of their own.
//   - level1:AHC (or AHC_BROKE) runs level2 as well: level2 becomes the same, and an explicit
//     different level2 is ignored with a note (HCCL documents exactly this).
//
// Examples:
//   level0:NA;level1:NHR                              every op: NHR between servers
//   level0:NA;level1:ring;level2:H-D_R                 ring between servers, RHD between pods
//   level1:H-D_R                                      level0 may be left out
//   " level0 : NA ; level1 : ring "                   spaces are ignored
//   allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R
//                                                     two ops forced, the rest automatic
//   alltoall=level0:NA;level1:pairwise/others=level0:NA;level1:NHR
//                                                     alltoall(v/vc) pairwise, every other op NHR
//   level0:NA;level1:AHC                              AHC at level1 and level2
//
// Rejected, each with the token, its 1-based position in the original value and the valid values:
//   level0:NA;level1:rng          unknown algorithm "rng"
//   allredce=level1:ring          unknown op "allredce"
//   level1:ring;level1:NHR        duplicated level
//   allreduce=level1:ring/allreduce=level1:NHR      duplicated op
//   allreduce=level1:ring/level1:NHR                global and per-op entries mixed
//   level1:ring/level1:NHR        more than one global entry
//   level0:NA;level1:ring;level2:ring;level3:ring;level0:NA     more than 4 levels
//   level0:NA;;level1:ring, ;level1:ring, level1:ring;, /allreduce=..., ...=...;/
//                                 empty segments, leading and trailing separators
//   level1ring                    missing ":";   allreduce   missing "="
//   allreduce=level0:null         per-op level0 may not be null
//   a value longer than 1600 bytes (HcclCommConfig.hcclAlgo's size)
ConfigResult<AlgoConfig> parseHcclAlgo(std::string_view value) {
  if (value.size() > kMaxHcclAlgoLength) {
    // The limit is HcclCommConfig's char array, so bytes; the excess starts at a whole character.
    std::size_t cut = 0;
    while (cut + text::decodeAt(value, cut).bytes <= kMaxHcclAlgoLength)
      cut += text::decodeAt(value, cut).bytes;
    const std::string_view rest = value.substr(cut);
    const std::string excess(text::prefix(rest, 16));
    const std::size_t position = text::charPosition(value, cut);
    const std::size_t chars = text::charCount(value);
    return ConfigError{
        .setting = "HCCL_ALGO",
        .token = excess,
        .position = position,
        .message = fmt::format(
            "HCCL_ALGO: value too long: {} bytes{}, the excess starts with {} at position {}; "
            "valid: at most {} bytes",
            value.size(),
            chars == value.size() ? std::string{} : fmt::format(" ({} characters)", chars),
            quote(text::truncated(rest, 16)), position, kMaxHcclAlgoLength),
        .source = {}};
  }
  try {
    return HcclAlgoParser(value).run();
  } catch (const ParseFailure& failure) {
    return failure.error;
  }
}

}  // namespace hccl::algo
