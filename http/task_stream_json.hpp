#pragma once
// TaskStreamEntry as JSON (nlohmann's to_json hook; not an installed header).
#include <taskwire/http/task_stream.hpp>

#include <nlohmann/json.hpp>

namespace taskwire::http {

inline void to_json(nlohmann::json& j, const TaskStreamEntry& e) {
  j = nlohmann::json{{"seq", e.seq},       {"key", e.key},       {"function", e.function},
                     {"worker", e.worker}, {"thread", e.lane},   {"start", e.start},
                     {"stop", e.stop},     {"transfer_seconds", e.transfer_seconds},
                     {"nbytes", e.nbytes}, {"erred", e.erred},   {"transfer", e.transfer}};
}

}  // namespace taskwire::http
