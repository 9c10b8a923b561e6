// Map/reduce example: integrals by composite Simpson's rule, one map task per chunk of
// sub-intervals, partial sums reduced by a binary tree in the cluster; each checked against its
// exact value.
//
//   ./mapreduce_integral [--intervals N] [--chunksize N] [--workers N] [--scheme tcp|inproc]
//
// The cluster (a scheduler and single-thread workers) runs inside this process, so the example
// needs nothing else; with a running scheduler, connect a taskwire::Client to it instead.
#include "examples/mapreduce_cluster.hpp"

#include <taskwire/graph/execute.hpp>
#include <taskwire/runtime/log.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

namespace integral {

/// One map input: Simpson's rule over [a, b] with `panels` panels, for integrand `which`.
struct Piece {
  int which = 0;
  double a = 0, b = 0;
  int panels = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & which & a & b & panels; }
};

double integrand(int which, double x) {
  switch (which) {
    case 0: return 4.0 / (1.0 + x * x);  // over [0, 1]: pi
    case 1: return std::sin(x);          // over [0, pi]: 2
    default: return std::exp(-x) * x;    // over [0, 1]: 1 - 2/e
  }
}

double simpson(Piece p) {
  const double h = (p.b - p.a) / p.panels;
  double s = integrand(p.which, p.a) + integrand(p.which, p.b);
  for (int i = 1; i < p.panels; ++i) s += (i % 2 ? 4 : 2) * integrand(p.which, p.a + i * h);
  return s * h / 3;
}

double add(std::vector<double> parts) {
  double s = 0;
  for (double x : parts) s += x;
  return s;
}

}  // namespace integral

TASKWIRE_REGISTER(integral::simpson);
TASKWIRE_REGISTER(integral::add);

int main(int argc, char** argv) {
  int intervals = 4096, workers = 2;
  std::size_t chunksize = 16;
  std::string scheme = "tcp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--intervals") intervals = std::atoi(argv[i + 1]);
    else if (flag == "--chunksize") chunksize = std::strtoul(argv[i + 1], nullptr, 10);
    else if (flag == "--workers") workers = std::atoi(argv[i + 1]);
    else if (flag == "--scheme") scheme = argv[i + 1];
    else return fmt::print(stderr, "unknown option {}\n", flag), 2;
  }
  taskwire::runtime::init_logging({"warn", "", -1});
  mapreduce::InProcessCluster cluster(scheme == "tcp" ? "tcp://127.0.0.1:0" : "inproc://auto",
                                      workers);
  struct Case {
    const char* name;
    int which;
    double a, b, exact;
  };
  const Case cases[] = {{"4/(1+x^2) on [0,1]", 0, 0, 1, std::numbers::pi},
                        {"sin x on [0,pi]", 1, 0, std::numbers::pi, 2.0},
                        {"x e^-x on [0,1]", 2, 0, 1, 1 - 2 / std::numbers::e}};
  int failures = 0;
  for (const auto& c : cases) {
    std::vector<integral::Piece> pieces;
    const double width = (c.b - c.a) / intervals;
    for (int i = 0; i < intervals; ++i)
      pieces.push_back({c.which, c.a + i * width, c.a + (i + 1) * width, 8});
    namespace graph = taskwire::graph;
    auto g = graph::reduce(graph::map(integral::simpson, pieces), integral::add);
    // A run-once program: if tearing the cluster down ever hung after the last result, the
    // watchdog armed here would end the process (status 124) after 60 s.
    const double value = graph::execute(g, cluster.client(),
                                        {.chunksize = chunksize, .exit_after_seconds = 60});
    const double error = std::abs(value - c.exact);
    const bool ok = error < 1e-9;
    failures += !ok;
    fmt::print("{:<22} {:.15f}  exact {:.15f}  error {:.1e}  {}\n", c.name, value, c.exact, error,
               ok ? "ok" : "WRONG");
  }
  return failures == 0 ? 0 : 1;
}
