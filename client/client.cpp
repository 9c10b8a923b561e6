#include <taskwire/client/client.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

namespace taskwire {

Client Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  auto file = runtime::SchedulerFile::read(path);
  return Client(file.address_for("tcp"), std::move(options));
}

}  // namespace taskwire
