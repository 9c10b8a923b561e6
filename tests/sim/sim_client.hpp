#pragma once
// The simulated client: submits graphs, follows what the scheduler reports of their wanted
// keys, checks every value it is given against the graph's direct computation and every
// error against the failures the harness injected, and releases finished graphs.
#include "sim_graphs.hpp"
#include "sim_network.hpp"

#include <map>
#include <string>
#include <vector>

namespace taskwire::sim {

class Cluster;

class SimClient {
 public:
  explicit SimClient(Cluster& cluster) : cluster_(cluster) {}

  void submit(Graph g);
  void receive(const Envelope& e);
  /// Graphs submitted and not yet released.
  std::size_t open_graphs() const;
  std::size_t unfinished_graphs() const;
  /// At quiescence: every wanted key of every open graph is done (in memory with the right
  /// value on the workers the scheduler names, or erred for a reason the harness caused).
  void check_settled();
  /// Releases every open graph (the run's end: afterwards nothing may be left anywhere).
  void release_all();
  /// Every task of every graph submitted, for diagnosis.
  std::vector<std::string> all_keys() const;

 private:
  enum class Outcome { pending, memory, erred };
  struct KeyStatus {
    Outcome outcome = Outcome::pending;
    std::string blamed, cause;
  };
  struct GraphRun {
    Graph graph;
    std::map<std::string, KeyStatus> wanted;
    bool released = false;
  };

  GraphRun* owner(const std::string& key);
  void on_in_memory(const OpKeyInMemory& m);
  void on_erred(const OpKeyErred& m);
  /// As ClientCore::results(): reads `key` from the holders the scheduler names; true when
  /// one had it (its value is checked). Each that does not (gone, or its copy lost with a
  /// spill file) is reported missing, as the real client does.
  bool fetch(GraphRun& run, const std::string& key);
  void retry_fetch(const LocalFetchRetry& r);
  /// The failure behind an error names a task of the key's graph upstream of it that really
  /// failed (enough times to use up its retries) or killed workers.
  void check_error(const GraphRun& run, const std::string& key, const OpKeyErred& m);
  void check_value(const GraphRun& run, const std::string& key, std::uint64_t value,
                   const std::string& where);
  void maybe_release(GraphRun& run);
  void release(GraphRun& run);
  bool finished(const GraphRun& run) const;

  Cluster& cluster_;
  std::vector<GraphRun> runs_;
  std::map<std::string, std::size_t> owner_;  ///< wanted key -> index in runs_
};

}  // namespace taskwire::sim
