#include "tests/comm/mpi/mpi_fixture.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/mpi/mpi_wire.hpp>

#include <fmt/format.h>

namespace taskwire::test {
namespace {

// Every rank listens at its own mpi://RANK[:PORT]; its client targets the same port on the
// next rank, so each rank's server serves the previous rank's client.
class MpiFixture final : public SchemeFixture {
 public:
  MpiFixture() : env_(std::make_unique<mpi::MpiEnvironment>()) {
    auto config = runtime::Config::from_env();
    config.role = "test";
    config.name = fmt::format("rank-{}", env_->rank());
    // Two threads, as for the other schemes, so strands are exercised for real.
    context_ = std::make_unique<runtime::Context>(config, 2);
    registry_ = std::make_unique<comm::Registry>(*context_);
    comm::register_builtin_backends(*registry_);
    context_->start();
  }
  ~MpiFixture() override {
    // Comms and backends before their Context, all of them before MPI goes.
    registry_.reset();
    context_.reset();
    env_.reset();
  }

  std::string scheme() const override { return "mpi"; }
  std::string listen_address() override { return fmt::format("mpi://{}", env_->rank()); }
  std::string target(const comm::Listener& own) override {
    auto at = comm::mpi::MpiLocation::parse(comm::Address::parse(own.contact_address()).location);
    at.rank = (env_->rank() + 1) % env_->size();
    return at.str();
  }
  std::string unreachable_address() override {
    return fmt::format("mpi://{}:{}", (env_->rank() + 1) % env_->size(), 64999);
  }
  void sync() override { env_->barrier(); }

  mpi::MpiEnvironment& env() { return *env_; }

 private:
  std::unique_ptr<mpi::MpiEnvironment> env_;
};

}  // namespace

std::unique_ptr<SchemeFixture> make_mpi_fixture() { return std::make_unique<MpiFixture>(); }

mpi::MpiEnvironment& mpi_env() {
  if (selected_scheme() != "mpi") selected_scheme() = "mpi";
  return static_cast<MpiFixture&>(fixture()).env();
}

}  // namespace taskwire::test
