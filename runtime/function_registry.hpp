#pragma once
// Functions by name. TASKWIRE_REGISTER(fn) makes `fn` callable by name in every process that
// links (or --preload's) the file holding the macro. Arguments and the result travel as one
// Boost.Serialization frame each, so a dependency's result frame can stand in for an
// argument of the same type without being re-encoded.
//
// This registry is the one deliberate piece of global mutable state in taskwire (see
// STYLE.md): registration happens from static initialisers, possibly of shared libraries
// loaded at run time, before any Context exists. It is guarded by a mutex.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::runtime {

/// Calls a registered function on serialized arguments; returns the serialized result.
/// Throws std::invalid_argument for a wrong argument count or an undecodable argument, and
/// lets the function's own exception through.
using Invoker = std::function<Frame(const std::vector<Frame>& args)>;

struct RegisteredFunction {
  std::string name;
  std::size_t arity = 0;
  Invoker invoke;
};

class FunctionRegistry {
 public:
  static FunctionRegistry& global();

  /// Registers `fn` under `name`; a second registration of the same name is ignored if it is
  /// the same function (a library loaded twice), and throws std::logic_error otherwise.
  void add(std::string name, const void* address, std::size_t arity, Invoker invoke);
  /// nullptr when unknown.
  const RegisteredFunction* find(const std::string& name) const;
  /// The name `fn` was registered under; throws std::invalid_argument naming the fix.
  std::string name_of(const void* address) const;
  std::vector<std::string> names() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, RegisteredFunction> by_name_;
  std::unordered_map<const void*, std::string> by_address_;
};

namespace detail {

template <class T>
using arg_t = std::remove_cv_t<std::remove_reference_t<T>>;

template <class R, class... A, std::size_t... I>
Frame invoke_with(R (*fn)(A...), const std::vector<Frame>& frames, std::index_sequence<I...>) {
  std::tuple<arg_t<A>...> args;
  std::size_t at = 0;
  try {
    ((at = I, from_frame(frames[I], std::get<I>(args))), ...);
  } catch (const SerializationError& e) {
    throw std::invalid_argument("argument " + std::to_string(at) + " cannot be decoded as the " +
                                "function's parameter type: " + e.what());
  }
  if constexpr (std::is_void_v<R>) {
    fn(std::get<I>(args)...);
    return to_frame(true);
  } else {
    return to_frame(fn(std::get<I>(args)...));
  }
}

template <class R, class... A>
Invoker make_invoker(R (*fn)(A...)) {
  return [fn](const std::vector<Frame>& frames) -> Frame {
    if (frames.size() != sizeof...(A))
      throw std::invalid_argument("expects " + std::to_string(sizeof...(A)) + " argument(s), got " +
                                  std::to_string(frames.size()));
    return invoke_with(fn, frames, std::index_sequence_for<A...>{});
  };
}

struct Registrar {
  template <class R, class... A>
  Registrar(const char* name, R (*fn)(A...)) {
    FunctionRegistry::global().add(name, reinterpret_cast<const void*>(fn), sizeof...(A),
                                   make_invoker(fn));
  }
};

}  // namespace detail
}  // namespace taskwire::runtime

#define TASKWIRE_CONCAT_INNER(a, b) a##b
#define TASKWIRE_CONCAT(a, b) TASKWIRE_CONCAT_INNER(a, b)
/// Registers a free function (or a static member function) under its spelled name.
#define TASKWIRE_REGISTER(fn)                                                        \
  static const ::taskwire::runtime::detail::Registrar TASKWIRE_CONCAT(taskwire_reg_, \
                                                                      __COUNTER__) { #fn, &fn }
