// The pages' people's units and charts' ticks (tools/render/page.hpp, chart.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

#include "../../tools/render/chart.hpp"
#include "../../tools/render/page.hpp"

using namespace tracemodel_cli;

TEST_CASE("pages: numbers have their thousands separated") {
  CHECK(page::grouped(0) == "0");
  CHECK(page::grouped(999) == "999");
  CHECK(page::grouped(1000) == "1,000");
  CHECK(page::grouped(7574738) == "7,574,738");
  CHECK(page::grouped(-1234.5, 1) == "-1,234.5");
  CHECK(page::grouped(123456.789, 3) == "123,456.789");
  CHECK(page::grouped(-0.01, 1) == "0.0");  // rounds to zero: no sign
  CHECK(page::count(90937999) == "90,937,999");
}

TEST_CASE("pages: a column of times takes the unit of its largest value") {
  const page::time_unit idle("us", 7574738);  // HTA's microseconds: 7.6 s
  CHECK(idle.name() == "ms");
  CHECK(idle.scale() == 1000);
  CHECK(idle.text(7574738) == "7,574.738");
  CHECK(idle.text(12) == "0.012");
  CHECK(idle.header("idle") == "idle (ms)");
  CHECK(idle.with_unit(2500) == "2.500 ms");
  CHECK(idle.tick(2500) == "2.5");
  CHECK(idle.checked("a.0.b", 1500) ==
        "<span data-check=\"a.0.b\" data-unit=\"ms\" data-scale=\"1000\">1.500</span>");

  const page::time_unit small("ns", 9'999'000);  // below 10 ms: µs
  CHECK(small.name() == "µs");
  CHECK(small.text(1234) == "1.2");
  CHECK(small.text(9'999'000) == "9,999.0");
  CHECK(page::time_unit("us", 9000).name() == "µs");
  CHECK(page::time_unit("us", 9000).text(9000) == "9,000");
  CHECK(page::time_unit("ns", 10'000'000).name() == "ms");
  CHECK(page::time_unit("ns", 99e9).name() == "ms");
  const page::time_unit long_run("ns", 1e11);
  CHECK(long_run.name() == "s");
  CHECK(long_run.text(123'456'789'000) == "123.457");
  CHECK(page::time_unit("ns", -5e7).name() == "ms");  // by magnitude
  CHECK(page::time_unit("ns", 0).name() == "µs");
}

TEST_CASE("charts: ticks are round, evenly spaced and cover the range") {
  CHECK(chart::ticks(0, 100) == std::vector<double>{0, 20, 40, 60, 80, 100});
  CHECK(chart::ticks(0, 1, 4, 1) == std::vector<double>{0, 1});  // a count: no halves
  CHECK(chart::ticks(-300, 300) == std::vector<double>{-300, -200, -100, 0, 100, 200, 300});
  CHECK(chart::ticks(5, 5) == std::vector<double>{5});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-3, 9), unit(0, 1);
  for (int run = 0; run < 20000; ++run) {
    const double span = std::pow(10.0, exponent(rng));
    const double lo = (unit(rng) < 0.3 ? 0.0 : (unit(rng) - 0.5) * 4 * span);
    const double hi = lo + span;
    const int target = unit(rng) < 0.5 ? 4 : 5;
    const double min_step = unit(rng) < 0.3 ? 1.0 : 0.0;
    const auto t = chart::ticks(lo, hi, target, min_step);
    CAPTURE(lo);
    CAPTURE(hi);
    CAPTURE(target);
    const double eps = span * 1e-9;
    if (t.empty()) {  // no multiple of the least step in the range
      CHECK(min_step == 1.0);
      CHECK(std::floor(hi) < lo);
      continue;
    }
    CHECK(t.front() >= lo - eps);
    CHECK(t.back() <= hi + eps);
    if (t.size() < 2) {
      // Only where the step had to be at least 1 and the range is shorter.
      CHECK(min_step == 1.0);
      CHECK(hi - lo < 2);
      continue;
    }
    const double step = t[1] - t[0];
    CHECK(step >= min_step - eps);
    // 1, 2 or 5 times a power of ten.
    const double power = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const double m = step / power;
    CHECK((std::abs(m - 1) < 1e-6 || std::abs(m - 2) < 1e-6 || std::abs(m - 5) < 1e-6));
    for (std::size_t k = 1; k < t.size(); ++k)
      CHECK(std::abs(t[k] - t[k - 1] - step) <= eps + step * 1e-9);
    // Covers the range: no room for another tick at either end, and not too many.
    CHECK(t.front() - step < lo + eps);
    CHECK(t.back() + step > hi - eps);
    CHECK(static_cast<double>(t.size()) <= 1.5 * target + 1);
  }
}
