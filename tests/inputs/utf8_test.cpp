// UTF-8 for messages: decoding by Unicode's table 3-7, character positions, quoting that hides
// nothing and never splits a character, and the names of look-alike characters.
#include <gtest/gtest.h>

#include <string>

#include "common/utf8.hpp"

namespace hccl::text {
namespace {

TEST(Utf8, DecodesWellFormedSequences) {
  const std::string s = "a\u00e9\u20ac\U0001F600";  // 1, 2, 3 and 4 bytes
  EXPECT_EQ(decodeAt(s, 0).code, U'a');
  EXPECT_EQ(decodeAt(s, 1).code, U'\u00e9');
  EXPECT_EQ(decodeAt(s, 1).bytes, 2u);
  EXPECT_EQ(decodeAt(s, 3).code, U'\u20ac');
  EXPECT_EQ(decodeAt(s, 3).bytes, 3u);
  EXPECT_EQ(decodeAt(s, 6).code, U'\U0001F600');
  EXPECT_EQ(decodeAt(s, 6).bytes, 4u);
  EXPECT_EQ(charCount(s), 4u);
  EXPECT_EQ(charPosition(s, 0), 1u);
  EXPECT_EQ(charPosition(s, 3), 3u);
  EXPECT_EQ(charPosition(s, 6), 4u);
  EXPECT_EQ(charPosition(s, s.size()), 5u);
  EXPECT_EQ(firstInvalid(s), std::string::npos);
}

TEST(Utf8, EveryIllFormedByteIsOneInvalidCharacter) {
  // Overlong forms, surrogates, above U+10FFFF, stray continuation bytes, truncated sequences,
  // bytes that never occur.
  for (const std::string bad : {"\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80",
                                "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80",
                                "\xbf", "\xe2\x82", "\xf0\x9f\x98", "\xff", "\xfe"}) {
    SCOPED_TRACE(quoted(bad));
    const Char c = decodeAt(bad, 0);
    EXPECT_FALSE(c.valid);
    EXPECT_EQ(c.bytes, 1u);
    EXPECT_EQ(firstInvalid(bad), 0u);
    EXPECT_EQ(charCount(bad), bad.size());  // every byte counts once
  }
  EXPECT_EQ(firstInvalid("ok\xffok"), 2u);
}

TEST(Utf8, PrefixNeverCutsACharacter) {
  const std::string s = "\u00e9\u00e9\u00e9";
  EXPECT_EQ(prefix(s, 2), "\u00e9\u00e9");
  EXPECT_EQ(truncated(s, 2), "\u00e9\u00e9...");
  EXPECT_EQ(truncated(s, 3), s);
  EXPECT_EQ(truncated("abc", 10), "abc");
}

TEST(Utf8, QuotedHidesNothing) {
  EXPECT_EQ(quoted("ring"), "\"ring\"");
  EXPECT_EQ(quoted("r\u00efng \u00d7"), "\"r\u00efng \u00d7\"");  // printable: as written
  EXPECT_EQ(quoted("a\nb\t\"\\d"), "\"a\\x0ab\\x09\\x22\\d\"");
  EXPECT_EQ(quoted("\x7f"), "\"\\x7f\"");
  EXPECT_EQ(quoted("\xff\xc3"), "\"\\xff\\xc3\"");  // not UTF-8: bytes
  EXPECT_EQ(quoted("a\u00a0b\u200b\u202e\ufeff\u0085"),
            "\"a\\u{00A0}b\\u{200B}\\u{202E}\\u{FEFF}\\u{0085}\"");
  EXPECT_EQ(quoted("\xe2\x82"), "\"\\xe2\\x82\"");  // a truncated sequence: two bytes
}

TEST(Utf8, DescribesOneCharacter) {
  EXPECT_EQ(describe("x", 0), "'x'");
  EXPECT_EQ(describe("\n", 0), "U+000A (a control character)");
  EXPECT_EQ(describe("a\u00d7", 1), "'\u00d7' (U+00D7 multiplication sign)");
  EXPECT_EQ(describe("\u00ef", 0), "'\u00ef' (U+00EF)");
  EXPECT_EQ(describe("\u00a0", 0), "U+00A0 (invisible no-break space)");
  EXPECT_EQ(describe("\u2066", 0), "U+2066 (invisible)");
  EXPECT_EQ(describe("\xff", 0), "byte 0xFF (not UTF-8)");
  EXPECT_EQ(describe("\U0001F600", 0), "'\U0001F600' (U+1F600)");
}

TEST(Utf8, HintsNameTheFirstNonAsciiCharacter) {
  EXPECT_EQ(nonAsciiHint("ring", 5), "");
  EXPECT_EQ(nonAsciiHint("2\u00d74", 1),
            "; position 2 holds '\u00d7' (U+00D7 multiplication sign): did you mean 'x'?");
  EXPECT_EQ(nonAsciiHint("\u00e9\uff1b", 10), "; position 10 holds '\u00e9' (U+00E9)");
  EXPECT_EQ(nonAsciiHint("ab\uff1b", 10),
            "; position 12 holds '\uff1b' (U+FF1B full-width form): did you mean ';'?");
  EXPECT_EQ(nonAsciiHint("a\u2014b", 1),
            "; position 2 holds '\u2014' (U+2014 em dash): did you mean '-'?");
  EXPECT_EQ(nonAsciiHint("\ufeffring", 1),
            "; position 1 holds U+FEFF (invisible zero width no-break space (byte order mark)): "
            "delete it?");
  EXPECT_EQ(nonAsciiHint("a\xff", 3), "; position 4 holds byte 0xFF (not UTF-8)");
}

}  // namespace
}  // namespace hccl::text
