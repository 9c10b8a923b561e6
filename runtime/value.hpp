#pragma once
// A task's data as a worker holds and hands it around: the live object a task returned, the
// bytes that came from the wire or the spill disk, or, for a short while, both.
//
// A worker decodes a value at most once, however many of its tasks read it: a Value held in
// a data store (mark_held()) keeps the object its first reader decoded, and every later reader
// gets that same immutable object by `const T&`. Serialization happens only at the edges:
// sending to a peer or a client, and spilling to disk (docs/worker-data.md).
//
// Thread-safety: a Value is a shared handle; every member may be called from any thread. The
// live object is never changed once made: readers share it without locks.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace taskwire::runtime {

// value_nbytes: how many bytes a live value holds, for a worker's memory accounting (what it
// reports to the scheduler, when it pauses and spills), measured once when the value is made,
// without serializing it where its type tells (docs/worker-data.md, "Sizes"):
// - a type with a free `std::uint64_t taskwire_nbytes(const T&)` found by argument-dependent
//   lookup: what that says (the hook for types whose size only they know);
// - a trivially copyable type (numbers, std::array of numbers, plain structs): sizeof(T);
// - std::string, and std::vector of numbers: the object plus its capacity (the memory held,
//   which is what a memory limit is about, not only the bytes used);
// - std::vector of such types: the object, its spare capacity, and each element's size;
// - anything else: the size it serializes to, measured by one counting pass of the archive
//   (no output is written or kept).
namespace value_size_detail {

template <class T>
concept has_hook = requires(const T& v) {
  { taskwire_nbytes(v) } -> std::convertible_to<std::uint64_t>;
};

template <class T>
struct is_vector : std::false_type {};
template <class E, class A>
struct is_vector<std::vector<E, A>> : std::true_type {};

template <class T>
constexpr bool sized_by_type() {
  if constexpr (has_hook<T> || std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>)
    return true;
  else if constexpr (is_vector<T>::value && !std::is_same_v<T, std::vector<bool>>)
    return sized_by_type<typename T::value_type>();
  else
    return false;
}

}  // namespace value_size_detail

/// Bytes `value` holds in memory (see above).
template <class T>
std::uint64_t value_nbytes(const T& value) {
  namespace d = value_size_detail;
  if constexpr (d::has_hook<T>) {
    return static_cast<std::uint64_t>(taskwire_nbytes(value));
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return sizeof(T) + value.capacity();
  } else if constexpr (d::sized_by_type<T>()) {  // a vector of sized elements
    using E = typename T::value_type;
    std::uint64_t n = sizeof(T) + (value.capacity() - value.size()) * sizeof(E);
    if constexpr (std::is_trivially_copyable_v<E> && !d::has_hook<E>) {
      n += value.size() * sizeof(E);
    } else {
      for (const auto& e : value) n += value_nbytes(e);
    }
    return n;
  } else {
    return detail::serialize_into(nullptr, 0, value);
  }
}

namespace detail {

/// How to send a live object of one type: its type, to match readers, and its serializer.
struct LiveType {
  const std::type_info* type;
  Frame (*serialize)(const void* object);
};

template <class T>
Frame serialize_live(const void* object) {
  return to_frame(*static_cast<const T*>(object));
}

/// What a Value shares: the forms it is held in, under one lock.
class ValueCell {
 public:
  explicit ValueCell(Frame bytes) : bytes_(std::move(bytes)), has_bytes_(true) {}
  ValueCell(std::shared_ptr<const void> object, LiveType type, std::uint64_t nbytes)
      : object_(std::move(object)), type_(type), live_nbytes_(nbytes) {}

  /// The live object when it is a T; else, for a held value with bytes, the T decoded from
  /// them (once: later readers get the same object; concurrent readers wait for the first);
  /// else null. Throws SerializationError for bytes that are not a T.
  template <class T>
  std::shared_ptr<const T> shared_as() {
    std::lock_guard lock(mu_);
    if (auto live = live_as_locked<T>()) return live;
    if (object_ || !held_ || !has_bytes_) return nullptr;
    auto decoded = std::make_shared<T>();
    from_frame(bytes_, *decoded);
    live_nbytes_ = value_nbytes(*decoded);
    type_ = LiveType{&typeid(T), &serialize_live<T>};
    object_ = std::shared_ptr<const void>(decoded, decoded.get());
    return decoded;
  }

  /// The live object when it is a T, else null: never decodes.
  template <class T>
  std::shared_ptr<const T> live_as() const {
    std::lock_guard lock(mu_);
    return live_as_locked<T>();
  }

  Frame bytes() const;
  std::uint64_t size() const;
  std::uint64_t live_bytes() const;
  std::uint64_t serialized_bytes() const;
  void mark_held(std::string key);
  std::string key_if_both_forms() const;
  bool drop_bytes_if_live();

 private:
  template <class T>
  std::shared_ptr<const T> live_as_locked() const {
    if (!object_ || *type_.type != typeid(T)) return nullptr;
    return std::shared_ptr<const T>(object_, static_cast<const T*>(object_.get()));
  }

  mutable std::mutex mu_;
  Frame bytes_;
  bool has_bytes_ = false;
  std::shared_ptr<const void> object_;  ///< null: no live form yet
  LiveType type_{nullptr, nullptr};
  std::uint64_t live_nbytes_ = 0;
  bool held_ = false;
  std::string key_;  ///< held_: the key a data store holds it under
};

}  // namespace detail

class Value {
 public:
  Value() = default;
  /// A value in its serialized form (received from a peer, a client, or read from disk).
  Value(Frame bytes) : cell_(std::make_shared<detail::ValueCell>(std::move(bytes))) {}  // NOLINT

  /// A live value, as a task returned it; its size is measured once (value_nbytes).
  template <class T>
  static Value of(T&& value) {
    using U = std::remove_cvref_t<T>;
    auto object = std::make_shared<const U>(std::forward<T>(value));
    const auto nbytes = value_nbytes(*object);
    return Value(std::make_shared<detail::ValueCell>(
        std::shared_ptr<const void>(object, object.get()),
        detail::LiveType{&typeid(U), &detail::serialize_live<U>}, nbytes));
  }

  bool empty() const noexcept { return !cell_; }
  /// Bytes it stands for: the live object's size when there is one (value_nbytes), else
  /// the serialized size.
  std::uint64_t size() const { return cell_ ? cell_->size() : 0; }
  /// Memory held now in each form (both are non-zero while a decode has not been settled).
  std::uint64_t live_bytes() const { return cell_ ? cell_->live_bytes() : 0; }
  std::uint64_t serialized_bytes() const { return cell_ ? cell_->serialized_bytes() : 0; }

  /// The serialized form, for sending or spilling: the bytes held, or the live object
  /// serialized now (not kept: the caller sends or writes it and lets it go).
  Frame bytes() const { return cell_ ? cell_->bytes() : Frame(); }

  /// The live T to read in place, without a copy: see ValueCell::shared_as. Null when the
  /// value is neither a live T nor held bytes: decode a private copy (decode_into).
  template <class T>
  std::shared_ptr<const T> shared_as() const {
    return cell_ ? cell_->shared_as<T>() : nullptr;
  }
  /// The live T, if the value is one now, without decoding (for a reader that copies it
  /// anyway: a decode kept for later readers would be one more copy held meanwhile).
  template <class T>
  std::shared_ptr<const T> live_as() const {
    return cell_ ? cell_->live_as<T>() : nullptr;
  }
  /// Decodes a private T from the serialized form (the live object of another type is
  /// serialized first, as a peer would receive it). Throws SerializationError.
  template <class T>
  void decode_into(T& out) const {
    from_frame(bytes(), out);
  }

  /// Held by a data store under `key`: a decode is kept for the next reader (a value no
  /// store holds, a task's inline argument, is read once and decoded straight into its
  /// parameter).
  void mark_held(std::string key) const {
    if (cell_) cell_->mark_held(std::move(key));
  }
  /// The key given to mark_held (the last one, if several) while both forms are held (a
  /// reader decoded the bytes), else empty: one lock, for the check after every task.
  std::string key_if_both_forms() const {
    return cell_ ? cell_->key_if_both_forms() : std::string();
  }
  /// Once a reader decoded it, the bytes it came as are no longer needed: drops them; true
  /// if it did (the caller accounts for the freed memory).
  bool drop_bytes_if_live() const { return cell_ && cell_->drop_bytes_if_live(); }
  /// Whether both handles share one value (and so one decode).
  bool same_as(const Value& other) const noexcept { return cell_ && cell_ == other.cell_; }

 private:
  explicit Value(std::shared_ptr<detail::ValueCell> cell) : cell_(std::move(cell)) {}
  std::shared_ptr<detail::ValueCell> cell_;
};

}  // namespace taskwire::runtime
