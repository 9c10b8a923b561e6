// Live values in the worker's data store: a task's result is held as the object it returned
// and read in place; bytes are decoded once, however many tasks read them; serialization
// happens only to send or spill. Counted's serialize() counts its decodes and encodes.
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/worker/data_store.hpp>

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace taskwire;
using runtime::FunctionRegistry;
using runtime::Value;
using worker::DataStore;

namespace live_fns {

std::atomic<int> decodes{0};
std::atomic<int> encodes{0};
std::atomic<int> copies{0};

struct Counted {
  std::vector<double> data;
  Counted() = default;
  explicit Counted(std::size_t n) : data(n) {
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<double>(i) * 0.5;
  }
  Counted(const Counted& o) : data(o.data) { ++copies; }
  Counted(Counted&&) noexcept = default;
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) noexcept = default;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & data;
    if constexpr (Archive::is_loading::value) ++decodes;
    else ++encodes;
  }
  // Its size without a counting pass of serialize() (which would count as an encode here).
  friend std::uint64_t taskwire_nbytes(const Counted& c) {
    return sizeof(Counted) + c.data.capacity() * sizeof(double);
  }
};

Counted make(std::size_t n) { return Counted(n); }
double element(const Counted& c, std::size_t i) { return c.data.at(i); }
// Takes its own copy and changes it: the held value must not change.
double scribble(Counted c, std::size_t i) {
  c.data.at(i) = -1;
  return c.data.at(i);
}

// The first element of each, as a merge of pieces reads them (a list form's parameter).
double first_of_each(const std::vector<Counted>& pieces) {
  double sum = 0;
  for (const auto& p : pieces) sum += p.data.at(1);
  return sum;
}

}  // namespace live_fns

TASKWIRE_REGISTER(live_fns::make);
TASKWIRE_REGISTER(live_fns::element);
TASKWIRE_REGISTER(live_fns::scribble);
TASKWIRE_REGISTER(live_fns::first_of_each);

namespace live_fns {

const runtime::RegisteredFunction& fn(const std::string& name) {
  const auto* f = FunctionRegistry::global().find("live_fns::" + name);
  REQUIRE(f);
  return *f;
}

double read_element(DataStore& store, const std::string& key, std::size_t i) {
  auto held = store.value(key);
  REQUIRE(held);
  auto out = fn("element").invoke({*held, runtime::to_frame(i)});
  store.settle(*held);  // as the worker does once a task has run
  return runtime::from_frame<double>(out.bytes());
}

void reset_counts() {
  live_fns::decodes = 0;
  live_fns::encodes = 0;
  live_fns::copies = 0;
}

}  // namespace live_fns

using live_fns::fn;
using live_fns::read_element;
using live_fns::reset_counts;
using test::TempDir;

TEST_CASE("live values: a task's result is held as it was returned and read in place",
          "[worker][live]") {
  reset_counts();
  DataStore store;
  store.put("block", fn("make").invoke({runtime::to_frame(std::size_t{1000})}));
  const auto counts = store.counts();
  CHECK(counts.serialized_bytes == 0);
  CHECK(counts.live_bytes >= 1000 * sizeof(double));
  CHECK(counts.memory_bytes == counts.live_bytes);
  CHECK(store.nbytes() == counts.live_bytes);
  for (std::size_t i = 0; i < 50; ++i) CHECK(read_element(store, "block", i) == 0.5 * double(i));
  CHECK(live_fns::decodes == 0);
  CHECK(live_fns::encodes == 0);
  CHECK(live_fns::copies == 0);
  // Every reader gets the same object.
  auto a = store.value("block")->shared_as<live_fns::Counted>();
  auto b = store.value("block")->shared_as<live_fns::Counted>();
  REQUIRE(a);
  CHECK(a.get() == b.get());
}

TEST_CASE("live values: bytes are decoded once for many readers, then held live",
          "[worker][live]") {
  const auto frame = runtime::to_frame(live_fns::Counted(4096));
  reset_counts();
  DataStore store;
  store.put("fetched", frame);  // as a peer's data_reply leaves it
  CHECK(store.counts().serialized_bytes == frame.size());
  CHECK(store.counts().live_bytes == 0);
  std::vector<std::thread> readers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&store, &wrong, t] {
      for (std::size_t i = 0; i < 25; ++i) {
        const std::size_t at = i * 4 + static_cast<std::size_t>(t);
        auto held = store.value("fetched");
        auto out = fn("element").invoke({*held, runtime::to_frame(at)});
        store.settle(*held);
        if (runtime::from_frame<double>(out.bytes()) != 0.5 * double(at)) ++wrong;
      }
    });
  for (auto& r : readers) r.join();
  CHECK(wrong == 0);
  CHECK(live_fns::decodes == 1);
  const auto counts = store.counts();
  CHECK(counts.serialized_bytes == 0);  // the bytes went once decoded
  CHECK(counts.live_bytes >= 4096 * sizeof(double));
  CHECK(counts.memory_bytes == counts.live_bytes);
  // Sending it serializes the live value: the bytes are what a peer would have sent.
  auto sent = store.get_many({"fetched"});
  REQUIRE(sent.found.size() == 1);
  CHECK(sent.found[0].second.view() == frame.view());
  CHECK(live_fns::encodes == 1);
}

TEST_CASE("live values: a by-value parameter gets one copy and the held value does not change",
          "[worker][live]") {
  reset_counts();
  DataStore store;
  store.put("block", fn("make").invoke({runtime::to_frame(std::size_t{100})}));
  auto held = store.value("block");
  CHECK(runtime::from_frame<double>(
            fn("scribble").invoke({*held, runtime::to_frame(std::size_t{3})}).bytes()) == -1);
  CHECK(live_fns::copies == 1);
  CHECK(read_element(store, "block", 3) == 1.5);
  // An inline argument (bytes no store holds) is decoded straight into the parameter.
  reset_counts();
  const Value inline_arg(runtime::to_frame(live_fns::Counted(10)));
  reset_counts();
  fn("scribble").invoke({inline_arg, runtime::to_frame(std::size_t{0})});
  CHECK(live_fns::decodes == 1);
  CHECK(live_fns::copies == 0);
}

TEST_CASE("live values: a list parameter copies live values and decodes held bytes straight "
          "into its elements, keeping no decode",
          "[worker][live]") {
  const auto fetched = runtime::to_frame(live_fns::Counted(4096));
  DataStore store;
  store.put("fetched", fetched);  // from a peer: bytes
  store.put("computed", fn("make").invoke({runtime::to_frame(std::size_t{4096})}));
  const auto before = store.counts();
  reset_counts();
  const auto* list = FunctionRegistry::global().find(
      runtime::list_form_name("live_fns::first_of_each"));
  REQUIRE(list);
  const std::vector<Value> args{runtime::to_frame(std::vector<std::int64_t>{2}),
                                *store.value("fetched"), *store.value("computed")};
  CHECK(runtime::from_frame<double>(list->invoke(args).bytes()) == 1.0);
  for (const auto& a : args) store.settle(a);  // as the worker does once a task has run
  CHECK(live_fns::decodes == 1);
  CHECK(live_fns::copies == 1);  // the live one; the bytes went straight into their element
  // The fetched value is held as it came, once: not as its bytes and a decode as well.
  const auto after = store.counts();
  CHECK(after.serialized_bytes == fetched.size());
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.memory_bytes == before.memory_bytes);
  // A reader by const& still decodes it once, then reads it in place.
  reset_counts();
  for (std::size_t i = 0; i < 5; ++i) CHECK(read_element(store, "fetched", i) == 0.5 * double(i));
  CHECK(live_fns::decodes == 1);
  CHECK(store.counts().serialized_bytes == 0);
}

TEST_CASE("live values: spilling serializes a live value, which comes back as bytes decoded once",
          "[worker][live][spill]") {
  TempDir dir;
  reset_counts();
  DataStore store({dir.path, 0});
  store.put("block", fn("make").invoke({runtime::to_frame(std::size_t{2000})}));
  store.put("small", fn("make").invoke({runtime::to_frame(std::size_t{1})}));
  const auto live = store.counts().live_bytes;
  CHECK(store.spill_to(0) == live);
  CHECK(live_fns::encodes == 2);
  auto counts = store.counts();
  CHECK(counts.memory_bytes == 0);
  CHECK(counts.spilled_keys == 2);
  const auto serialized = runtime::to_frame(live_fns::Counted(2000));
  reset_counts();
  CHECK(counts.spilled_bytes == serialized.size() + runtime::to_frame(live_fns::Counted(1)).size());
  // A read for a peer leaves it on disk, and decodes nothing.
  auto sent = store.get_many({"block"});
  REQUIRE(sent.found.size() == 1);
  CHECK(sent.found[0].second.view() == serialized.view());
  CHECK(store.spilled("block"));
  // A task here brings it back, as bytes, and decodes it once for all its readers.
  for (std::size_t i = 0; i < 10; ++i) CHECK(read_element(store, "block", i) == 0.5 * double(i));
  CHECK(live_fns::decodes == 1);
  CHECK_FALSE(store.spilled("block"));
  counts = store.counts();
  CHECK(counts.unspills_total == 1);
  CHECK(counts.serialized_bytes == 0);
  CHECK(counts.live_bytes >= 2000 * sizeof(double));
  // Its file was kept (the value has not changed): spilling it again writes nothing.
  reset_counts();
  CHECK(store.spill_to(0) > 0);
  CHECK(live_fns::encodes == 0);
  CHECK(store.counts().spills_total == 2);
  CHECK(read_element(store, "block", 1999) == 0.5 * 1999);
}

namespace live_fns {
struct Sized {
  std::vector<int> v;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & v;
  }
};
std::uint64_t taskwire_nbytes(const Sized&) { return 12345; }
struct Unsized {
  std::string name;
  std::vector<double> v;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & name & v;
  }
};
}  // namespace live_fns

using live_fns::Sized;
using live_fns::Unsized;

TEST_CASE("live values: sizes come from the type where it tells, else from one counting pass",
          "[worker][live]") {
  std::vector<double> v;
  v.reserve(1000);
  v.resize(10);
  CHECK(runtime::value_nbytes(v) == sizeof(v) + 1000 * sizeof(double));
  CHECK(runtime::value_nbytes(7.0) == sizeof(double));
  const std::string s(100, 'x');
  CHECK(runtime::value_nbytes(s) == sizeof(s) + s.capacity());
  CHECK(runtime::value_nbytes(std::vector<std::string>(3, s)) ==
        sizeof(std::vector<std::string>) + 3 * (sizeof(s) + s.capacity()));
  CHECK(runtime::value_nbytes(Sized{}) == 12345);
  Unsized u{"name", std::vector<double>(500, 1.0)};
  CHECK(runtime::value_nbytes(u) == runtime::to_frame(u).size());
  CHECK(Value::of(u).size() == runtime::to_frame(u).size());
}
