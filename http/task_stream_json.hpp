#pragma once
// Task-stream entries as JSON text, written straight into the reply: one poll carries up to
// http::kStreamEntriesPerPoll of them, and building them as nlohmann::json objects first cost
// the daemon's thread several times more (docs/dashboard.md). Not an installed header.
#include <taskwire/http/task_stream.hpp>

#include <span>
#include <string>

namespace taskwire::http {

/// Appends `entries` as a JSON array of objects (seq, key, function, worker, thread, start,
/// stop, transfer_seconds, nbytes, erred, transfer). Strings that are not valid UTF-8 get
/// U+FFFD in place of the bad bytes, so that a task's key never breaks the reply.
void append_task_stream_json(std::string& out, std::span<const TaskStreamEntry> entries);

}  // namespace taskwire::http
