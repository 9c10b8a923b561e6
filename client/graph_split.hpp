#pragma once
// Splits one submission into update_graph operations that each fit in a message under the
// comm limits (runtime::Limits): a map over a million inputs would otherwise be one message
// of a million frames, which no transport sends (the frame-count limit is 65 536).
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/protocol.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taskwire::client {

struct GraphPart {
  protocol::UpdateGraph graph;         ///< wants every one of its tasks
  std::vector<runtime::Frame> frames;  ///< the payload its tasks' frame args index
};

struct GraphSplitOptions {
  /// Tasks per part: bounds the scheduler's work (and memory) per incoming message.
  std::size_t max_tasks = 10'000;
  /// Payload frames per part: the limit less the message's header frame and room for the
  /// operations a part may share its message with.
  std::uint64_t max_frames = (std::uint64_t{1} << 16) - 64;
  std::uint64_t max_bytes = std::uint64_t{16} << 30;  ///< payload bytes per part
  /// The options that keep each part, with a few small operations, within `limits`.
  static GraphSplitOptions within(const runtime::Limits& limits);
};

/// Every task in exactly one part. A submission that fits in one part is returned as it is;
/// otherwise the tasks are reordered so that a dependency inside the submission sits in the
/// same part or an earlier one (the scheduler resolves each part against what it already
/// knows), keeping the submission order otherwise; the tasks of a dependency cycle keep theirs
/// (the scheduler then reports them, as an unknown key). A task whose own frames are past the
/// limits gets a part of its own: sending it fails, with the reason, for that task alone.
std::vector<GraphPart> split_graph(std::vector<protocol::TaskSpec> tasks,
                                   std::vector<runtime::Frame> frames,
                                   const GraphSplitOptions& options);

}  // namespace taskwire::client
