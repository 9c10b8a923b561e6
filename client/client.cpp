#include <taskwire/client/client.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

namespace taskwire {

Client Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  // As a worker does: the scheduler may be starting at the same time (a batch script).
  auto file = runtime::SchedulerFile::wait_and_read(path, options.connect_timeout);
  return Client(file->address_for("tcp"), std::move(options));
}

}  // namespace taskwire
