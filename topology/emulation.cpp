#include "topology/emulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>

#include "common/utf8.hpp"
#include "topology/error.hpp"

namespace hccl::topo {

const std::string_view kEmulationGrammar =
    R"grammar(Emulation spec grammar (one machine pretends to be a cluster):
  SPEC    := [ORDER ":"] LAYOUT
  LAYOUT  := P x S x R              P supernodes, each of S servers of R ranks
           | POD {"," POD}          one or more supernodes, in order
  POD     := SERVERS | "(" SERVERS ")"
  SERVERS := TERM {"+" TERM}        the servers of one supernode, in order
  TERM    := R | S x R              one server of R ranks, or S servers of R ranks each
  ORDER   := block | rr             block (default): ranks fill server 0, then server 1, ...
                                    rr (or round-robin, interleaved): rank k goes to the next
                                    server in turn, skipping servers that are full
"x", "X" and "*" multiply; spaces are ignored. Counts are integers 1..65536 and the layout
holds at most 1048576 ranks. A count may carry a unit word that must fit its place:
supernode(s), superpod(s), pod(s) / server(s), node(s) / rank(s).
Examples: "8", "2x4", "2 supernodes x 2 servers x 4 ranks", "3+5", "1+4+2", "(4+4),(4)",
"(2x8),(8)", "rr: 2x4".)grammar";

std::uint32_t EmulationSpec::ranks() const {
  std::uint32_t n = 0;
  for (const auto& pod : supernodes)
    for (std::uint32_t r : pod) n += r;
  return n;
}

std::uint32_t EmulationSpec::servers() const {
  std::uint32_t n = 0;
  for (const auto& pod : supernodes) n += static_cast<std::uint32_t>(pod.size());
  return n;
}

namespace {

enum class Tok : std::uint8_t { Number, Word, Times, Plus, Comma, LParen, RParen, Colon, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  std::size_t column = 0;  // 1-based, in the original spec
};

enum class Role : std::uint8_t { Supernode, Server, Rank };

std::string_view roleName(Role r) {
  switch (r) {
    case Role::Supernode:
      return "supernodes";
    case Role::Server:
      return "servers";
    case Role::Rank:
      return "ranks";
  }
  return "?";
}

std::string_view roleWords(Role r) {
  switch (r) {
    case Role::Supernode:
      return "supernode(s), superpod(s), pod(s)";
    case Role::Server:
      return "server(s), node(s)";
    case Role::Rank:
      return "rank(s)";
  }
  return "?";
}

std::optional<Role> unitRole(std::string word) {
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (word.size() > 1 && word.back() == 's') word.pop_back();
  if (word == "supernode" || word == "superpod" || word == "pod") return Role::Supernode;
  if (word == "server" || word == "node") return Role::Server;
  if (word == "rank") return Role::Rank;
  return std::nullopt;
}

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "the end of the spec";
  return fmt::format("'{}' at column {}", text::truncated(t.text, 40), t.column);
}

struct Factor {
  std::uint32_t count = 0;
  std::optional<Role> unit;
  Token countToken;
  Token unitToken;
};

struct Term {
  std::vector<Factor> factors;
};

struct Pod {
  std::vector<Term> terms;
  bool parenthesized = false;
};

class Parser {
 public:
  explicit Parser(std::string_view spec) : spec_(spec) { lex(); }

  EmulationSpec parse() {
    EmulationSpec out;
    if (tokens_.size() == 1)
      fail("is empty", "write a layout such as \"2x4\", \"3+5\" or \"(4+4),(4)\"");
    if (peek().kind == Tok::Word && tokens_.size() > 2 && tokens_[1].kind == Tok::Colon) {
      out.order = parseOrder(next());
      next();
    }
    std::vector<Pod> pods{parsePod()};
    while (peek().kind == Tok::Comma) {
      next();
      pods.push_back(parsePod());
    }
    if (peek().kind != Tok::End)
      fail(fmt::format("has unexpected {}", describe(peek())),
           "expected 'x', '+', ',' or the end of the spec");
    build(pods, out);
    return out;
  }

 private:
  [[noreturn]] void fail(std::string_view problem, std::string_view valid) const {
    throw TopologyError(fmt::format("emulation spec {} {}: {}",
                                    text::quoted(text::truncated(spec_, 100)), problem, valid));
  }

  void lex() {
    std::size_t i = 0;
    while (i < spec_.size()) {
      unsigned char c = static_cast<unsigned char>(spec_[i]);
      std::size_t start = i;
      if (std::isspace(c)) {
        ++i;
        continue;
      }
      Token t;
      t.column = start + 1;
      if (std::isdigit(c)) {
        while (i < spec_.size() && std::isdigit(static_cast<unsigned char>(spec_[i]))) ++i;
        t.kind = Tok::Number;
      } else if (std::isalpha(c)) {
        while (i < spec_.size()) {
          unsigned char d = static_cast<unsigned char>(spec_[i]);
          if (!std::isalpha(d) && d != '-' && d != '_') break;
          ++i;
        }
        std::string_view w = spec_.substr(start, i - start);
        t.kind = (w == "x" || w == "X") ? Tok::Times : Tok::Word;
      } else {
        ++i;
        switch (c) {
          case '*':
            t.kind = Tok::Times;
            break;
          case '+':
            t.kind = Tok::Plus;
            break;
          case ',':
            t.kind = Tok::Comma;
            break;
          case '(':
            t.kind = Tok::LParen;
            break;
          case ')':
            t.kind = Tok::RParen;
            break;
          case ':':
            t.kind = Tok::Colon;
            break;
          default: {
            // Everything before is ASCII (anything else stops here), so the column is start + 1.
            const std::string meant = text::didYouMean(spec_, start);
            fail(fmt::format("has an unexpected character {} at column {}",
                             text::describe(spec_, start), start + 1),
                 fmt::format("valid are digits, unit words, 'x' 'X' '*' '+' ',' '(' ')' ':' and "
                             "spaces{}{}",
                             meant.empty() ? "" : "; ", meant));
          }
        }
      }
      t.text = std::string(spec_.substr(start, i - start));
      tokens_.push_back(std::move(t));
    }
    Token end;
    end.column = spec_.size() + 1;
    tokens_.push_back(end);
  }

  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  RankOrder parseOrder(const Token& t) const {
    std::string w = t.text;
    std::transform(w.begin(), w.end(), w.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (w == "block") return RankOrder::Block;
    if (w == "rr" || w == "round-robin" || w == "round_robin" || w == "interleaved")
      return RankOrder::RoundRobin;
    fail(fmt::format("has an unknown rank order {}", describe(t)),
         "valid orders are block, rr, round-robin, interleaved");
  }

  Factor parseFactor() {
    const Token& t = next();
    if (t.kind != Tok::Number)
      fail(fmt::format("has {} where a count belongs", describe(t)),
           "expected an integer from 1 to 65536");
    Factor f;
    f.countToken = t;
    std::uint64_t v = 0;
    for (char ch : t.text) {
      v = v * 10 + static_cast<std::uint64_t>(ch - '0');
      if (v > kMaxEmulatedCount) break;
    }
    if (v == 0 || v > kMaxEmulatedCount)
      fail(fmt::format("has count {}", describe(t)), "counts must be integers from 1 to 65536");
    f.count = static_cast<std::uint32_t>(v);
    if (peek().kind == Tok::Word) {
      f.unitToken = next();
      f.unit = unitRole(f.unitToken.text);
      if (!f.unit)
        fail(fmt::format("has an unknown unit {}", describe(f.unitToken)),
             "a count may be followed by supernode(s), superpod(s), pod(s), server(s), node(s) "
             "or rank(s)");
    }
    return f;
  }

  Term parseTerm() {
    Term term{{parseFactor()}};
    while (peek().kind == Tok::Times) {
      const Token& times = next();
      if (term.factors.size() == 3)
        fail(fmt::format("has a fourth factor after {}", describe(times)),
             "a product has at most three counts: supernodes x servers x ranks");
      term.factors.push_back(parseFactor());
    }
    return term;
  }

  Pod parsePod() {
    Pod pod;
    Token open;
    if (peek().kind == Tok::LParen) {
      open = next();
      pod.parenthesized = true;
    }
    pod.terms.push_back(parseTerm());
    while (peek().kind == Tok::Plus) {
      next();
      pod.terms.push_back(parseTerm());
    }
    if (pod.parenthesized) {
      if (peek().kind != Tok::RParen)
        fail(fmt::format("has {} where ')' should close the '(' at column {}", describe(peek()),
                         open.column),
             "expected '+', 'x' or ')'");
      next();
    }
    return pod;
  }

  void checkUnits(const Term& term, std::span<const Role> roles) const {
    for (std::size_t i = 0; i < term.factors.size(); ++i) {
      const Factor& f = term.factors[i];
      if (f.unit && *f.unit != roles[i])
        fail(fmt::format("has unit {} on a count of {}", describe(f.unitToken), roleName(roles[i])),
             fmt::format("valid words there are {}", roleWords(roles[i])));
    }
  }

  void build(const std::vector<Pod>& pods, EmulationSpec& out) const {
    static constexpr Role kThree[] = {Role::Supernode, Role::Server, Role::Rank};
    static constexpr Role kTwo[] = {Role::Server, Role::Rank};
    static constexpr Role kOne[] = {Role::Rank};
    std::uint64_t total = 0;
    auto account = [&](std::uint64_t ranks) {
      total += ranks;
      if (total > kMaxEmulatedRanks)
        fail(fmt::format("describes more than {} ranks", kMaxEmulatedRanks), "use smaller counts");
    };
    const Term& first = pods.front().terms.front();
    if (pods.size() == 1 && pods.front().terms.size() == 1 && !pods.front().parenthesized &&
        first.factors.size() == 3) {
      checkUnits(first, kThree);
      const std::uint32_t p = first.factors[0].count, s = first.factors[1].count,
                          r = first.factors[2].count;
      account(std::uint64_t{p} * s * r);
      out.supernodes.assign(p, std::vector<std::uint32_t>(s, r));
      return;
    }
    for (const Pod& pod : pods) {
      std::vector<std::uint32_t>& servers = out.supernodes.emplace_back();
      for (const Term& term : pod.terms) {
        if (term.factors.size() == 3)
          fail(fmt::format("has a product of three counts at column {} inside a larger layout",
                           term.factors[0].countToken.column),
               "supernodes x servers x ranks must be the whole spec; inside a supernode write "
               "R or S x R");
        if (term.factors.size() == 2) {
          checkUnits(term, kTwo);
          account(std::uint64_t{term.factors[0].count} * term.factors[1].count);
          servers.insert(servers.end(), term.factors[0].count, term.factors[1].count);
        } else {
          checkUnits(term, kOne);
          account(term.factors[0].count);
          servers.push_back(term.factors[0].count);
        }
      }
    }
  }

  std::string_view spec_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

std::string formatServers(const std::vector<std::uint32_t>& servers) {
  std::string out;
  for (std::size_t i = 0; i < servers.size();) {
    std::size_t j = i;
    while (j < servers.size() && servers[j] == servers[i]) ++j;
    if (!out.empty()) out += '+';
    // Short runs read better spelled out ("4+4"); long ones as a product ("16x8").
    if (j - i >= 4) {
      out += fmt::format("{}x{}", j - i, servers[i]);
    } else {
      for (std::size_t k = i; k < j; ++k) out += fmt::format("{}{}", k > i ? "+" : "", servers[i]);
    }
    i = j;
  }
  return out;
}

}  // namespace

EmulationSpec parseEmulationSpec(std::string_view spec) {
  return Parser(spec).parse();
}

std::string formatEmulationSpec(const EmulationSpec& spec) {
  std::string out = spec.order == RankOrder::RoundRobin ? "rr:" : "";
  const auto& pods = spec.supernodes;
  if (pods.empty()) return out;
  const bool samePods = std::all_of(pods.begin(), pods.end(),
                                    [&](const auto& p) { return p.size() == pods.front().size(); });
  const std::uint32_t r0 = pods.front().empty() ? 0 : pods.front().front();
  const bool sameServers = std::all_of(pods.begin(), pods.end(), [&](const auto& p) {
    return std::all_of(p.begin(), p.end(), [&](std::uint32_t r) { return r == r0; });
  });
  if (pods.size() > 1 && samePods && sameServers)
    return out + fmt::format("{}x{}x{}", pods.size(), pods.front().size(), r0);
  if (pods.size() == 1) return out + formatServers(pods.front());
  for (std::size_t p = 0; p < pods.size(); ++p)
    out += fmt::format("{}({})", p ? "," : "", formatServers(pods[p]));
  return out;
}

std::vector<std::uint32_t> serverOfRank(const EmulationSpec& spec) {
  std::vector<std::uint32_t> sizes;
  for (const auto& pod : spec.supernodes) sizes.insert(sizes.end(), pod.begin(), pod.end());
  std::vector<std::uint32_t> owner;
  owner.reserve(spec.ranks());
  if (spec.order == RankOrder::Block) {
    for (std::uint32_t s = 0; s < sizes.size(); ++s) owner.insert(owner.end(), sizes[s], s);
    return owner;
  }
  std::vector<std::uint32_t> filled(sizes.size(), 0);
  const std::uint32_t total = spec.ranks();
  while (owner.size() < total) {
    for (std::uint32_t s = 0; s < sizes.size(); ++s) {
      if (filled[s] < sizes[s]) {
        ++filled[s];
        owner.push_back(s);
      }
    }
  }
  return owner;
}

}  // namespace hccl::topo
