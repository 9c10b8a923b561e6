#include "tests/comm/test_server.hpp"

#include <catch2/catch.hpp>

#include <future>

namespace taskwire::test {

TestServer::TestServer(SchemeFixture& fx, Mode mode, comm::ListenOptions options)
    : fx_(fx), st_(std::make_shared<State>()) {
  st_->mode = mode;
  options.on_reject = [st = st_](error_code ec, std::string detail, std::string) {
    std::lock_guard lock(st->mu);
    st->rejections.push_back({ec, std::move(detail)});
    st->cv.notify_all();
  };
  listener_ = comm::listen(
      fx.registry(), fx.listen_address(),
      [st = st_](comm::CommPtr c) {
        std::size_t idx;
        {
          std::lock_guard lock(st->mu);
          idx = st->records.size();
          st->records.emplace_back();
          st->comms.push_back(c);
        }
        serve(st, c, idx);
      },
      std::move(options));
}

TestServer::~TestServer() {
  listener_.reset();
  std::lock_guard lock(st_->mu);
  for (auto& c : st_->comms) c->abort();
}

void TestServer::serve(std::shared_ptr<State> st, comm::CommPtr c, std::size_t idx) {
  c->async_read([st, c, idx](error_code ec, runtime::Message m) {
    std::unique_lock lock(st->mu);
    auto& rec = st->records[idx];
    if (ec) {
      rec.end = ec;
      rec.ended = true;
      ++st->ended;
      st->cv.notify_all();
      return;
    }
    ++rec.count;
    st->bytes_read += m.total_bytes();
    if (st->mode == Mode::record) rec.messages.push_back(m);
    lock.unlock();
    if (st->mode == Mode::echo) c->async_write(std::move(m), [](error_code) {});
    if (st->mode != Mode::slow_read) return serve(st, c, idx);
    auto pause = std::make_shared<asio::steady_timer>(c->executor(), std::chrono::milliseconds(1));
    pause->async_wait([st, c, idx, pause](error_code) { serve(st, c, idx); });
  });
}

bool TestServer::wait_ended(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(st_->mu);
  return st_->cv.wait_for(lock, timeout, [&] { return st_->ended >= n; });
}

bool TestServer::wait_rejected(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(st_->mu);
  return st_->cv.wait_for(lock, timeout, [&] { return st_->rejections.size() >= n; });
}

std::vector<PeerRecord> TestServer::records() {
  std::lock_guard lock(st_->mu);
  return st_->records;
}

std::vector<Rejection> TestServer::rejections() {
  std::lock_guard lock(st_->mu);
  return st_->rejections;
}

runtime::Frame pattern_frame(std::size_t n, unsigned seed) {
  auto f = runtime::Frame::allocate(n);
  auto* p = f.mutable_data();
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return f;
}

bool has_pattern(const runtime::Frame& f, std::size_t n, unsigned seed) {
  if (f.size() != n) return false;
  const char* p = f.data();
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<char>((i * 31 + seed) & 0xff)) return false;
  return true;
}

runtime::Message read_within(const comm::CommPtr& c, std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<std::pair<error_code, runtime::Message>>>();
  auto fut = done->get_future();
  c->async_read([done](error_code ec, runtime::Message m) { done->set_value({ec, std::move(m)}); });
  REQUIRE(fut.wait_for(timeout) == std::future_status::ready);
  auto [ec, m] = fut.get();
  INFO("read failed: " << ec.message());
  REQUIRE(!ec);
  return m;
}

error_code read_error_within(const comm::CommPtr& c, std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  c->async_read([done](error_code ec, runtime::Message) { done->set_value(ec); });
  REQUIRE(fut.wait_for(timeout) == std::future_status::ready);
  return fut.get();
}

void write_within(const comm::CommPtr& c, runtime::Message m, std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  c->async_write(std::move(m), [done](error_code ec) { done->set_value(ec); });
  REQUIRE(fut.wait_for(timeout) == std::future_status::ready);
  auto ec = fut.get();
  INFO("write failed: " << ec.message());
  REQUIRE(!ec);
}

}  // namespace taskwire::test
