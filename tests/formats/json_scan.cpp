// The structural scanner that splits traceEvents into batches, against a byte-at-a-time
// reference on random inputs (its block-at-a-time path must agree with it at every boundary).
#include <doctest/doctest.h>

#include <charconv>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <system_error>

#include <simdjson.h>

#include <tracemodel/formats/json_check.hpp>
#include <tracemodel/formats/json_escape.hpp>
#include <tracemodel/formats/json_scan.hpp>

using tracemodel::input_error;
using tracemodel::detail::json_scanner;

namespace {

/// skip_value, one byte at a time: the end of the value at `p` (a string, object or array
/// starting exactly at p), or nothing when the input ends first or brackets do not balance.
std::optional<std::size_t> reference_skip(const std::string& s, std::size_t p) {
  auto skip_string = [&](std::size_t q) -> std::optional<std::size_t> {
    for (++q; q < s.size(); ++q) {
      if (s[q] == '\\')
        ++q;
      else if (s[q] == '"')
        return q + 1;
    }
    return std::nullopt;
  };
  if (s[p] == '"') return skip_string(p);
  std::size_t depth = 0;
  for (std::size_t q = p; q < s.size(); ++q) {
    const char c = s[q];
    if (c == '"') {
      const auto e = skip_string(q);
      if (!e) return std::nullopt;
      q = *e - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return std::nullopt;
      if (--depth == 0) return q + 1;
    }
  }
  return std::nullopt;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("json_scanner::skip_value agrees with a byte-at-a-time reference") {
    std::mt19937_64 rng(11);
    // Brackets and quotes are rare enough that values run across several 16-byte blocks.
    const std::string alphabet =
        "{}[]\"\\aaaaaaaaaaaaaaaaaaaaaaa , :0123456789\x7b\x7d\x5b\x5d\xe2";
    std::string plain = alphabet;
    std::erase(plain, '\\');
    std::size_t ended = 0, failed = 0;
    for (int round = 0; round < 20000; ++round) {
      const char starts[] = {'{', '[', '"'};
      std::string s(1, starts[rng() % 3]);
      const std::size_t n = rng() % 300;  // across several 64-byte blocks
      // Every other input has no backslash: all its blocks take the bit-mask path.
      const std::string& letters = round % 2 == 0 ? alphabet : plain;
      for (std::size_t k = 0; k < n; ++k) s += letters[rng() % letters.size()];
      const auto expected = reference_skip(s, 0);
      const json_scanner scan(s);
      INFO(s);
      try {
        const std::size_t got = scan.skip_value(0);
        REQUIRE(expected.has_value());
        CHECK(got == *expected);
        ++ended;
      } catch (const input_error&) {
        CHECK_FALSE(expected.has_value());
        ++failed;
      }
    }
    CHECK(ended > 2000);  // both outcomes are well represented
    CHECK(failed > 2000);
  }

  TEST_CASE("json_scanner: nesting limit and the offsets of its errors") {
    const std::string deep = std::string(2000, '[') + std::string(2000, ']');
    const json_scanner scan(deep);
    CHECK(scan.skip_value(0, 4000) == deep.size());
    try {
      (void)scan.skip_value(0);
      FAIL("no error");
    } catch (const input_error& e) {
      CHECK(e.offset() == 1024);  // the 1025th bracket
    }
    const std::string unterminated = "[\"abc\\\"def]";
    try {
      (void)json_scanner(unterminated).skip_value(0);
      FAIL("no error");
    } catch (const input_error& e) {
      CHECK(std::string(e.what()).find("inside a string") != std::string::npos);
      CHECK(e.offset() == unterminated.size());
    }
  }

  TEST_CASE("parse_micros: the short path agrees with the general one") {
    using tracemodel::detail::parse_micros;
    using tracemodel::detail::parse_micros_general;
    std::int64_t ns = 0;
    CHECK((parse_micros("620629.009", ns) && ns == 620629009));
    CHECK((parse_micros("-18.5", ns) && ns == -18500));
    CHECK((parse_micros("7", ns) && ns == 7000));
    CHECK((parse_micros("0.0005", ns) && ns == 1));  // rounded half away from zero
    CHECK((parse_micros("1e3", ns) && ns == 1000000));
    CHECK((parse_micros("999999999999999.999", ns) && ns == 999999999999999999));
    CHECK(!parse_micros("1.", ns));
    CHECK(!parse_micros("-", ns));
    CHECK(!parse_micros("1.2.3", ns));
    CHECK(!parse_micros("99999999999999999999", ns));  // beyond 64 bits in nanoseconds
    std::mt19937_64 rng(7);
    const char alphabet[] = "0123456789.-eE+x";
    std::size_t accepted = 0;
    for (int round = 0; round < 200000; ++round) {
      std::string t;
      if (rng() % 2 == 0) {  // number-shaped: sign, digits, a fraction of 0 to 5 digits
        if (rng() % 4 == 0) t += '-';
        for (std::size_t k = 0, n = rng() % 19; k < n; ++k)
          t += static_cast<char>('0' + rng() % 10);
        if (rng() % 3 != 0) {
          t += '.';
          for (std::size_t k = 0, n = rng() % 6; k < n; ++k)
            t += static_cast<char>('0' + rng() % 10);
        }
        if (rng() % 8 == 0) t += "e" + std::to_string(rng() % 5);
      } else {
        for (std::size_t k = 0, n = rng() % 8; k < n; ++k)
          t += alphabet[rng() % (sizeof alphabet - 1)];
      }
      std::int64_t fast = -1, general = -1;
      const bool a = parse_micros(t, fast), b = parse_micros_general(t, general);
      INFO(t);
      REQUIRE(a == b);
      if (a) {
        REQUIRE(fast == general);
        ++accepted;
      }
    }
    CHECK(accepted > 50000);
  }
}

TEST_SUITE("formats") {
  TEST_CASE("parse_int64: strict integer tokens, as std::from_chars reads them whole") {
    using tracemodel::detail::parse_int64;
    std::int64_t v = 0;
    CHECK(
        (parse_int64("-9223372036854775808", v) && v == std::numeric_limits<std::int64_t>::min()));
    CHECK((parse_int64("9223372036854775807", v) && v == std::numeric_limits<std::int64_t>::max()));
    CHECK(!parse_int64("9223372036854775808", v));
    CHECK((parse_int64("999999999999999999", v) && v == 999999999999999999));  // 18 digits
    CHECK((parse_int64("-0", v) && v == 0));
    CHECK(!parse_int64("-", v));
    CHECK(!parse_int64("", v));
    CHECK(!parse_int64("12a", v));
    CHECK(!parse_int64("1/", v));  // '/' is the character before '0'
    CHECK(!parse_int64("1:", v));  // ':' the one after '9'
    // Random tokens of digits (0 to 21 of them, a sign, now and then a stray character),
    // against std::from_chars on the same digits.
    std::mt19937_64 rng(17);
    std::size_t accepted = 0;
    for (int round = 0; round < 200000; ++round) {
      std::string t;
      if (rng() % 3 == 0) t += '-';
      for (std::size_t k = 0, n = rng() % 22; k < n; ++k) t += static_cast<char>('0' + rng() % 10);
      if (rng() % 10 == 0 && !t.empty()) t[rng() % t.size()] = "x/:. +"[rng() % 6];
      std::int64_t got = -7;
      const bool ok = parse_int64(t, got);
      // The reference: an optional '-' then only digits, the value within int64.
      const bool neg = !t.empty() && t[0] == '-';
      const std::string digits = t.substr(neg ? 1 : 0);
      bool want = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
      std::int64_t ref = 0;
      if (want) {
        const std::string signed_text = (neg ? "-" : "") + digits;
        const auto r =
            std::from_chars(signed_text.data(), signed_text.data() + signed_text.size(), ref);
        want = r.ec == std::errc() && r.ptr == signed_text.data() + signed_text.size();
      }
      INFO(t);
      REQUIRE(ok == want);
      if (!ok) REQUIRE(got == -7);  // a token it refuses leaves the value alone
      if (ok) {
        REQUIRE(got == ref);
        ++accepted;
      }
    }
    CHECK(accepted > 100000);
  }

  TEST_CASE("is_json_value: one well-formed JSON value, nothing else") {
    using tracemodel::detail::is_json_value;
    for (const char* ok :
         {"0", "-0", "1.5e+3", "-12.0E-2", "true", "null", " \n[1, \"a\", {\"k\": [false]}]\t",
          "\"\\u00e9\\ud83d\\ude00\\n\"", "{}", "[]", "\"\xc3\xa9\"", "{\"a\":{\"b\":[[]]}}"})
      CHECK_MESSAGE(is_json_value(ok), ok);
    for (const char* bad : {"",          " ",        "{{{",         "[1,]",        "[1 2]",
                            "{\"a\"}",   "{\"a\":}", "{1:2}",       "01",          "1.",
                            ".5",        "1e",       "+1",          "tru",         "nul",
                            "\"open",    "\"\\x\"",  "\"\\ud800\"", "\"\\udc00\"", "\"\\u12\"",
                            "\"a\xc3\"", "\"\xff\"", "[1]]",        "[1] x",       "\"tab\there\"",
                            "NaN",       "[\"a\",]"})
      CHECK_MESSAGE(!is_json_value(bad), bad);
    CHECK(is_json_value(std::string(256, '[') + std::string(256, ']')));
    CHECK(!is_json_value(std::string(257, '[') + std::string(257, ']')));  // deeper than 256
    CHECK(!is_json_value(std::string(100000, '[')));                       // and no stack overflow
  }

  TEST_CASE("is_json_value: random short texts are JSON exactly when simdjson parses them") {
    // The alphabet leaves out what simdjson refuses though JSON allows it (exponents beyond a
    // double, \u escapes whose surrogates it judges): structure, literals, digits, strings,
    // escapes, spaces and bytes that are not UTF-8.
    const std::string alphabet = "[]{},:\"\\ -.0123456789truefalsn\t\nab\xc3\xa9\xff";
    std::mt19937_64 rng(5);
    simdjson::dom::parser parser;
    std::size_t valid = 0;
    for (int round = 0; round < 200000; ++round) {
      std::string s(1 + rng() % 10, ' ');
      for (char& c : s) c = alphabet[rng() % alphabet.size()];
      bool exponent = false;  // (simdjson refuses one beyond a double's range: left to the cases)
      for (std::size_t k = 1; k < s.size(); ++k)
        exponent = exponent || (s[k] == 'e' && s[k - 1] >= '0' && s[k - 1] <= '9');
      if (exponent) continue;
      const bool simd = parser.parse(simdjson::padded_string(s)).error() == simdjson::SUCCESS;
      CHECK_MESSAGE(tracemodel::detail::is_json_value(s) == simd, s);
      valid += simd;
    }
    CHECK(valid > 1000);
  }

  TEST_CASE("is_utf8 and to_utf8: simdjson's verdict, and the JSON writer's U+FFFD") {
    // Random bytes weighted towards the edges of UTF-8 (lead bytes, continuations, overlong and
    // surrogate starts, bytes past U+10FFFF), in runs long enough for the eight-byte ASCII step.
    const unsigned char pick[] = {'a',  'b',  0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0,
                                  0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x90, 0x8f};
    std::mt19937_64 rng(29);
    std::size_t valid = 0;
    for (int round = 0; round < 100000; ++round) {
      std::string s(rng() % 24, 'x');
      for (char& c : s)
        c = static_cast<char>(rng() % 3 == 0 ? pick[rng() % sizeof pick] : 'a' + rng() % 26);
      const bool ok = simdjson::validate_utf8(s.data(), s.size());
      CHECK_MESSAGE(tracemodel::detail::is_utf8(s) == ok, s);
      const std::string fixed = tracemodel::detail::to_utf8(s);
      CHECK(tracemodel::detail::is_utf8(fixed));
      CHECK((fixed == s) == ok);
      std::string escaped_fixed, escaped;
      tracemodel::detail::append_json_escaped(escaped_fixed, fixed);
      tracemodel::detail::append_json_escaped(escaped, s);
      CHECK(escaped_fixed == escaped);
      valid += ok;
    }
    CHECK(valid > 10000);
  }
}
