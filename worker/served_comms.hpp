#pragma once
// The comms a worker's listeners accepted and still serves (get_data, update_data), each
// served on its own strand: kept so that closing the worker closes them, and so that a comm
// accepted after that is turned away. Thread-safe. Not installed API.
#include <taskwire/comm/core/comm.hpp>

#include <mutex>
#include <set>

namespace taskwire::worker {

class ServedComms {
 public:
  /// Keeps `comm`; false (and `comm` untouched) once close_all() ran.
  bool add(const comm::CommPtr& comm);
  /// `comm` is no longer served (it failed or its peer went).
  void remove(const comm::CommPtr& comm);
  /// Closes every served comm gracefully (replies already queued still go); add() refuses
  /// from now on.
  void close_all();

 private:
  std::mutex mu_;
  std::set<comm::CommPtr> comms_;
  bool stopped_ = false;
};

}  // namespace taskwire::worker
