#include <taskwire/launch/daemon_bootstrap.hpp>

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace po = boost::program_options;

namespace taskwire::launch {

void add_tls_options(po::options_description& desc, TlsFileOptions& tls) {
  desc.add_options()("tls-ca-file", po::value(&tls.ca_file),
                     "PEM CA certificates that tls:// peers must be signed by; a listener "
                     "given one requires client certificates (mutual TLS) "
                     "(or TASKWIRE_TLS_CA_FILE)")(
      "tls-cert", po::value(&tls.cert_file),
      "PEM certificate (chain) this process presents on tls://; needed to listen there "
      "(or TASKWIRE_TLS_CERT)")(
      "tls-key", po::value(&tls.key_file),
      "PEM private key of --tls-cert (or TASKWIRE_TLS_KEY)");
}

void apply_tls_options(const TlsFileOptions& tls, runtime::Config& config) {
  if (!tls.ca_file.empty()) config.tls_ca_file = tls.ca_file;
  if (!tls.cert_file.empty()) config.tls_cert_file = tls.cert_file;
  if (!tls.key_file.empty()) config.tls_key_file = tls.key_file;
  const std::pair<const char*, const std::string*> files[] = {
      {"--tls-ca-file (TASKWIRE_TLS_CA_FILE)", &config.tls_ca_file},
      {"--tls-cert (TASKWIRE_TLS_CERT)", &config.tls_cert_file},
      {"--tls-key (TASKWIRE_TLS_KEY)", &config.tls_key_file}};
  for (const auto& [flag, path] : files) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    if (!in)
      throw std::invalid_argument(
          fmt::format("cannot read {} file '{}': {}", flag, *path, std::strerror(errno)));
  }
}

void add_daemon_common_options(po::options_description& desc, DaemonCommonOptions& common,
                               const std::string& log_file_help) {
  desc.add_options()("auth-token", po::value(&common.auth_token),
                     "token to present to peers and require from them (or TASKWIRE_AUTH_TOKEN)")(
      "log-level", po::value(&common.log_level)->default_value(common.log_level),
      "trace, debug, info, warn, error, critical, off")(
      "log-file", po::value(&common.log_file), log_file_help.c_str());
  add_tls_options(desc, common.tls);
}

std::optional<int> parse_daemon_command_line(const char* program, int argc, char* argv[],
                                             const po::options_description& desc,
                                             const po::positional_options_description* positional,
                                             const std::function<void()>& check) {
  try {
    po::variables_map vm;
    po::command_line_parser parser(argc, argv);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return kExitClean;
    }
    po::notify(vm);
    if (check) check();
  } catch (const std::exception& e) {  // po::error, or a check's std::invalid_argument
    fmt::print(stderr, "{}: {}\nTry '{} --help'.\n", program, e.what(), program);
    return kExitUsage;
  }
  return std::nullopt;
}

int run_daemon(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    spdlog::default_logger()->flush();
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return kExitFailure;
  }
}

runtime::Config daemon_config(const std::string& role, const std::string& name,
                     const DaemonCommonOptions& common) {
  auto config = runtime::Config::from_env();
  config.role = role;
  if (!name.empty()) config.name = name;
  if (!common.auth_token.empty()) config.auth_token = common.auth_token;
  apply_tls_options(common.tls, config);
  return config;
}

DaemonRuntime::DaemonRuntime(runtime::Config config)
    : context_(std::move(config), 1), registry_(context_) {
  comm::register_builtin_backends(registry_);
  context_.start();
}

StopSignals::StopSignals(runtime::Context& context)
    : state_(std::make_shared<State>()),
      signals_(std::make_unique<asio::signal_set>(context.io(), SIGINT, SIGTERM)) {
  // The state is shared with the handler, which may run on the io thread as this is destroyed.
  signals_->async_wait([state = state_](error_code ec, int signo) {
    if (ec) return;
    std::unique_lock lock(state->mu);
    state->signo = signo;
    auto action = state->action;
    lock.unlock();
    state->cv.notify_all();
    if (action) action(signo);
  });
}

StopSignals::~StopSignals() {
  error_code ignored;
  signals_->cancel(ignored);
}

void StopSignals::on_stop(std::function<void(int)> action) {
  std::unique_lock lock(state_->mu);
  state_->action = action;
  const int signo = state_->signo;
  lock.unlock();
  if (signo && action) action(signo);
}

int StopSignals::received() const {
  std::lock_guard lock(state_->mu);
  return state_->signo;
}

int StopSignals::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mu);
  state_->cv.wait_for(lock, timeout, [this] { return state_->signo != 0; });
  return state_->signo;
}

std::optional<std::chrono::milliseconds> parse_timeout(const std::string& text,
                                                       const std::string& flag) {
  if (text == "none") return std::nullopt;
  std::size_t end = 0;
  double value = -1;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = text.substr(end);
  double scale = -1;  // seconds per unit
  for (const auto& [name, seconds] : {std::pair{"", 1.0}, {"s", 1.0}, {"ms", 1e-3},
                                      {"m", 60.0}, {"h", 3600.0}})
    if (unit == name) scale = seconds;
  if (end == 0 || scale < 0 || !(value > 0) || !std::isfinite(value) || value * scale > 1e9)
    throw std::invalid_argument(fmt::format(
        "{} '{}': expected a positive duration such as 30, 30s, 500ms, 2m or 1h, or none (no "
        "limit)",
        flag, text));
  return std::chrono::milliseconds(static_cast<long long>(value * scale * 1000 + 0.5));
}

std::optional<std::string> find_scheduler(const SchedulerWait& where, StopSignals& stops) {
  if (where.scheduler_file.empty()) return where.address;
  const auto file = runtime::SchedulerFile::wait_and_read(where.scheduler_file, where.timeout,
                                                 [&stops] { return stops.received() != 0; });
  if (!file) return std::nullopt;
  return file->address_for("tcp");
}

std::chrono::milliseconds SchedulerWait::left() const {
  if (!timeout) return comm::kNoTimeout;
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return std::max(std::chrono::milliseconds(1), *timeout - spent);
}

std::string SchedulerWait::advice(const error_code& ec) const {
  if (comm::is_fatal(ec)) return {};  // the error says what is wrong; waiting cannot mend it
  return timeout ? fmt::format("; start the scheduler first, or allow it more time "
                               "(--connect-timeout {})",
                               timeout_text)
                 : std::string();
}

}  // namespace taskwire::launch
