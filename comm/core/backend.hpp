#pragma once
// Connector, Listener and Backend: what each transport implements (one folder per backend:
// tcp/, mpi/, inproc/, each including only comm/core and runtime). They produce raw comms;
// comm/core/connect.hpp adds retries and the handshake on top.
#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/backend_counters.hpp>
#include <taskwire/comm/core/comm.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm {

/// Called with a raw comm once a transport connection exists (before any handshake).
using RawConnectHandler = std::function<void(error_code, CommPtr)>;
/// Called on the listener's executor for each accepted raw comm.
using RawAcceptHandler = std::function<void(CommPtr)>;

class PendingHandshakes;

/// What a listener's owner (connect.hpp's listen()) asks of the backend's listener.
struct RawListenOptions {
  /// Where connections still in their handshake are counted and capped
  /// (pending_handshakes.hpp). A backend with a handshake of its own before the comm exists
  /// (tls://) counts those connections there too, so that they are capped as plain ones are;
  /// the others ignore it. Null: not capped.
  std::shared_ptr<PendingHandshakes> pending;
};

class Connector {
 public:
  virtual ~Connector() = default;
  /// Asynchronous, one attempt, no retry: fails with errc::refused if nothing listens.
  /// The handler runs on the context's executor.
  virtual void async_connect(const Address& address, RawConnectHandler handler) = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  /// Synchronous: binds and starts accepting. Throws CommError (e.g. address in use).
  virtual void start() = 0;
  /// Synchronous, idempotent: stops accepting; comms already accepted stay open.
  virtual void stop() noexcept = 0;
  /// The address as bound, possibly a wildcard (tcp://0.0.0.0:8786).
  virtual std::string listen_address() const = 0;
  /// A concrete address a peer can connect to (port 0 resolved, wildcard host replaced).
  virtual std::string contact_address() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view scheme() const noexcept = 0;
  virtual std::unique_ptr<Connector> make_connector() = 0;
  /// The listener is created stopped; call start().
  virtual std::unique_ptr<Listener> make_listener(const Address& address,
                                                  RawAcceptHandler on_comm,
                                                  const RawListenOptions& options) = 0;
  /// Synchronous, thread-safe: what this backend has counted since the process started
  /// (backend_counters.hpp); none by default.
  virtual std::vector<BackendCounter> counters() const { return {}; }
};

}  // namespace taskwire::comm
