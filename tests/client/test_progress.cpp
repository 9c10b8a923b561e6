// taskwire::ProgressReporter on a clock the test moves: what it writes, and when.
#include <taskwire/client/progress.hpp>

#include <catch2/catch.hpp>

#include <sstream>

using namespace taskwire;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  void advance(std::chrono::milliseconds d) { now += d; }
};

ProgressReportOptions on(std::ostringstream& out, FakeClock& clock,
                         ProgressReportOptions::Style style = ProgressReportOptions::Style::automatic) {
  ProgressReportOptions o;
  o.out = &out;
  o.style = style;
  o.clock = [&clock] { return clock.now; };
  return o;
}

}  // namespace

TEST_CASE("progress: off a terminal, a line at most every interval, then a final one",
          "[client][progress]") {
  std::ostringstream out;
  FakeClock clock;
  ProgressReporter report(on(out, clock), 10);
  CHECK_FALSE(report.draws_bar());  // a string stream is no terminal
  clock.advance(1s);
  report.update(1);
  CHECK(out.str().empty());
  clock.advance(4s);
  report.update(3, 1);  // 5 s since the start: due
  clock.advance(2s);
  report.update(4, 1);  // 2 s since the last line: not due
  clock.advance(3500ms);
  report.update(10, 1);
  clock.advance(500ms);
  report.finish();
  report.finish();  // once
  report.update(10, 2);
  CHECK(out.str() ==
        "progress: 3/10 tasks (30%), 1 erred, 5.0 s\n"
        "progress: 10/10 tasks (100%), 1 erred, 10.5 s\n"
        "progress: 10/10 tasks done, 1 erred, 11.0 s\n");
}

TEST_CASE("progress: the interval and the label are the caller's, and an early end says so",
          "[client][progress]") {
  std::ostringstream out;
  FakeClock clock;
  auto options = on(out, clock);
  options.interval = 100ms;
  options.label = "graph";
  {
    ProgressReporter report(options, 4);
    clock.advance(100ms);
    report.update(2);
    clock.advance(50ms);
    report.update(3);
  }  // destroyed before every task was done
  CHECK(out.str() ==
        "graph: 2/4 tasks (50%), 0.1 s\n"
        "graph: stopped at 3/4 tasks, 0.1 s\n");
}

TEST_CASE("progress: the bar is redrawn in place and its line ended at the finish",
          "[client][progress]") {
  std::ostringstream out;
  FakeClock clock;
  ProgressReporter report(on(out, clock, ProgressReportOptions::Style::bar), 10);
  CHECK(report.draws_bar());
  clock.advance(50ms);
  report.update(1);  // within the redraw interval: not drawn
  clock.advance(1950ms);
  report.update(5, 2);
  report.break_line();
  clock.advance(1s);
  report.finish();
  const std::string empty(30, ' ');
  CHECK(out.str() == "\r[" + empty + "] 0/10 tasks, 0.0 s" +
                         "\r[" + std::string(15, '#') + std::string(15, ' ') +
                         "] 5/10 tasks, 2 erred, 2.0 s\n" +
                         "\r[" + std::string(15, '#') + std::string(15, ' ') +
                         "] 5/10 tasks, 2 erred, 3.0 s\n");
}
