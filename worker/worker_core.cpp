#include <taskwire/worker/worker_core.hpp>

#include <filesystem>
#include <utility>

namespace taskwire::worker {
namespace {

// A fresh directory for this worker's spilled results inside options.local_directory (or the
// temporary directory), after removing those of dead workers there; none (empty) without a
// memory limit. Throws std::runtime_error naming the directory when it cannot be made.
SpillDirectory make_spill_directory(const MemoryOptions& options) {
  if (options.limit == 0) return {};
  return SpillDirectory::make(options.local_directory);
}

SpillOptions spill_options(const MemoryOptions& options, const std::filesystem::path& directory) {
  SpillOptions spill;
  spill.directory = directory;
  spill.target_bytes =
      static_cast<std::uint64_t>(options.target * static_cast<double>(options.limit));
  return spill;
}

}  // namespace

WorkerCore::WorkerCore(runtime::Context& context, comm::Registry& registry,
                       WorkerOptions options, std::shared_ptr<KeptData> kept)
    : context(context), registry(registry), options(std::move(options)),
      handshake(comm::HandshakeOptions::from(context.config())),
      spill_directory(kept ? std::move(kept->directory)
                           : make_spill_directory(this->options.memory)),
      strand(asio::make_strand(context.executor())),
      data(kept ? std::move(kept->data)
                : std::make_shared<DataStore>(
                      spill_options(this->options.memory, spill_directory.path()))) {
  if (this->options.nthreads == 0) this->options.nthreads = 1;
  handshake.role = "worker";
  if (!this->options.name.empty()) handshake.name = this->options.name;
}

}  // namespace taskwire::worker
