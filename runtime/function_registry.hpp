#pragma once
// Functions by name. TASKWIRE_REGISTER(fn) makes `fn` callable by name in every process that
// links (or --preload's) the file holding the macro. Arguments and the result are Values
// (value.hpp): a live object a task on this worker returned is read in place by `const T&`
// (a by-value parameter gets one copy of it), bytes from the wire are decoded, once for a
// value a data store holds. On the wire each travels as one Boost.Serialization frame.
//
// This registry is the one deliberate piece of global mutable state in taskwire (see
// STYLE.md): registration happens from static initialisers, possibly of shared libraries
// loaded at run time, before any Context exists. It is guarded by a mutex.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/runtime/value.hpp>

#include <boost/serialization/vector.hpp>

#include <array>

#include <cstdint>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::runtime {

/// Calls a registered function on its arguments; returns its result as a live Value.
/// Throws std::invalid_argument for a wrong argument count or an undecodable argument, and
/// lets the function's own exception through.
using Invoker = std::function<Value(const std::vector<Value>& args)>;
/// A function over serialized arguments, returning its serialized result (the built-in
/// graph runners, which pass batches of bytes on to EachInvoker and GatherInvoker).
using FrameInvoker = std::function<Frame(const std::vector<Frame>& args)>;

/// Runs a one-parameter function over a batch (graph/ chunks): a serialized std::vector of its
/// parameter type in, the serialized std::vector of its results out, in order. `at` holds the
/// index of the element being run, so a caller catching the function's exception knows which.
using EachInvoker = std::function<Frame(const Frame& inputs, std::size_t& at)>;

/// Calls a function whose first parameter is a std::vector<T> (graph/ reductions) with that
/// vector assembled from `parts` in order: part i is one serialized T, or, where batch[i] is
/// non-zero, a serialized std::vector<T> whose elements are spliced in. `rest` holds the
/// remaining parameters. Throws std::invalid_argument like Invoker.
using GatherInvoker = std::function<Frame(const std::vector<Frame>& parts,
                                          const std::vector<std::uint8_t>& batch,
                                          const std::vector<Frame>& rest)>;

struct RegisteredFunction {
  std::string name;
  std::size_t arity = 0;
  Invoker invoke;
  EachInvoker invoke_each;        ///< set for one-parameter functions returning a value
  GatherInvoker invoke_gathered;  ///< set when the first parameter is a std::vector
};

/// What a function registered with a std::vector<T> parameter is also found under: its list
/// form, which Client::submit calls when a std::vector<Future<T>> fills such a parameter. The
/// list form's first argument is the layout (a std::vector<std::int64_t>, one entry per
/// parameter: kOneArgument, or the number of arguments that fill that std::vector parameter
/// element by element); the arguments follow, flattened in parameter order. The task on the
/// wire is then an ordinary one: one argument (a value or a dependency) per element.
inline constexpr const char* kListFormSuffix = "[list-args]";
inline constexpr std::int64_t kOneArgument = -1;
inline std::string list_form_name(const std::string& name) { return name + kListFormSuffix; }

class FunctionRegistry {
 public:
  static FunctionRegistry& global();

  /// Registers `fn` under `name`; a second registration of the same name is ignored if it is
  /// the same function (a library loaded twice), and throws std::logic_error otherwise.
  void add(std::string name, const void* address, std::size_t arity, Invoker invoke,
           EachInvoker each = {}, GatherInvoker gathered = {});
  /// Registers the list form of `name` (see kListFormSuffix), found by find() under
  /// list_form_name(name) and not listed by names().
  void add_list_form(const std::string& name, std::size_t arity, Invoker invoke);
  /// Registers a function over serialized arguments (each argument's bytes in, bytes out).
  void add(std::string name, const void* address, std::size_t arity, FrameInvoker invoke);
  /// nullptr when unknown.
  const RegisteredFunction* find(const std::string& name) const;
  /// The name `fn` was registered under; throws std::invalid_argument naming the fix.
  std::string name_of(const void* address) const;
  std::vector<std::string> names() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, RegisteredFunction> by_name_;
  std::unordered_map<const void*, std::string> by_address_;
  std::unordered_map<std::string, RegisteredFunction> list_forms_;  // by list_form_name
};

namespace detail {

template <class T>
using arg_t = std::remove_cv_t<std::remove_reference_t<T>>;

template <class T>
struct is_vector : std::false_type {};
template <class T, class Alloc>
struct is_vector<std::vector<T, Alloc>> : std::true_type {};

template <class... A, std::size_t... I>
void decode_args(std::tuple<A...>& args, const std::vector<Frame>& frames,
                 std::index_sequence<I...>) {
  std::size_t at = 0;
  try {
    ((at = I, from_frame(frames[I], std::get<I>(args))), ...);
  } catch (const SerializationError& e) {
    throw std::invalid_argument("argument " + std::to_string(at) + " cannot be decoded as the " +
                                "function's parameter type: " + e.what());
  }
}

/// One argument of a call, for a parameter declared `P`. A `const T&` parameter reads the
/// value in place: the live T, or the one decode a held value keeps. Any other parameter
/// gets an object of its own: decoded straight into it when no store holds the value (an
/// inline argument: moved into a by-value parameter, never copied), else one copy of the
/// shared live T (the function may change or keep it; the held value must not change).
template <class P>
class ArgSlot {
 public:
  using T = arg_t<P>;
  static constexpr bool kInPlace =
      std::is_lvalue_reference_v<P> && std::is_const_v<std::remove_reference_t<P>>;

  void load(const Value& value) {
    if (auto live = value.shared_as<T>()) {
      if constexpr (kInPlace) {
        view_ = live.get();
        shared_ = std::move(live);
      } else {
        own_.emplace(*live);
      }
      return;
    }
    own_.emplace();
    value.decode_into(*own_);
    view_ = &*own_;
  }
  /// A std::vector parameter filled element by element from `n` values (a list form's call):
  /// each a live element copied, or bytes decoded straight into the element (the vector holds
  /// its own copy anyway: a decode kept in the value as well would hold the element twice
  /// while the task runs, and the value keeps its bytes for the next reader). Throws
  /// std::invalid_argument for another type.
  void load_list(const Value* values, std::size_t n) {
    if constexpr (is_vector<T>::value) {
      own_.emplace();
      own_->reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        using E = typename T::value_type;
        if (auto live = values[i].live_as<E>()) {
          own_->push_back(*live);
        } else {
          E element;
          values[i].decode_into(element);
          own_->push_back(std::move(element));
        }
      }
      view_ = &*own_;
    } else {
      (void)values;
      (void)n;
      throw std::invalid_argument("a list of arguments for a parameter that is not a std::vector");
    }
  }
  decltype(auto) get() {
    if constexpr (kInPlace) return static_cast<const T&>(*view_);
    else if constexpr (!std::is_reference_v<P>) return std::move(*own_);
    else return std::forward<P>(*own_);
  }

 private:
  std::shared_ptr<const T> shared_;
  std::optional<T> own_;
  const T* view_ = nullptr;
};

template <class... P, std::size_t... I>
void load_args(std::tuple<ArgSlot<P>...>& slots, const std::vector<Value>& values,
               std::index_sequence<I...>) {
  std::size_t at = 0;
  try {
    ((at = I, std::get<I>(slots).load(values[I])), ...);
  } catch (const SerializationError& e) {
    throw std::invalid_argument("argument " + std::to_string(at) + " cannot be decoded as the " +
                                "function's parameter type: " + e.what());
  }
}

template <class R, class... A, std::size_t... I>
Value invoke_with(R (*fn)(A...), const std::vector<Value>& values, std::index_sequence<I...> seq) {
  std::tuple<ArgSlot<A>...> slots;
  load_args(slots, values, seq);
  if constexpr (std::is_void_v<R>) {
    fn(std::get<I>(slots).get()...);
    return Value::of(true);
  } else {
    return Value::of(fn(std::get<I>(slots).get()...));
  }
}

template <class R, class... A, std::size_t... I>
Value invoke_listed(R (*fn)(A...), const std::vector<Value>& values,
                    const std::vector<std::int64_t>& layout, std::index_sequence<I...>) {
  std::tuple<ArgSlot<A>...> slots;
  std::size_t at = 0, next = 1;  // values[0] is the layout
  auto load = [&](auto& slot, std::size_t parameter) {
    at = parameter;
    if (layout[parameter] == kOneArgument) {
      slot.load(values[next++]);
    } else {
      slot.load_list(values.data() + next, static_cast<std::size_t>(layout[parameter]));
      next += static_cast<std::size_t>(layout[parameter]);
    }
  };
  try {
    (load(std::get<I>(slots), I), ...);
  } catch (const SerializationError& e) {
    throw std::invalid_argument("argument " + std::to_string(at) + " cannot be decoded as the " +
                                "function's parameter type: " + e.what());
  }
  if constexpr (std::is_void_v<R>) {
    fn(std::get<I>(slots).get()...);
    return Value::of(true);
  } else {
    return Value::of(fn(std::get<I>(slots).get()...));
  }
}

/// The list form's invoker (see kListFormSuffix): checks the layout against the arguments.
template <class R, class... A>
Invoker make_list_invoker(R (*fn)(A...)) {
  return [fn](const std::vector<Value>& values) -> Value {
    std::vector<std::int64_t> layout;
    if (!values.empty()) values[0].decode_into(layout);
    std::size_t expected = 1;
    for (auto n : layout) {
      if (n < kOneArgument || (n >= 0 && static_cast<std::uint64_t>(n) >= values.size()))
        throw std::invalid_argument("a list length below 0 or above the arguments given");
      expected += n == kOneArgument ? 1 : static_cast<std::size_t>(n);
    }
    if (values.empty() || layout.size() != sizeof...(A) || values.size() != expected)
      throw std::invalid_argument("the list form expects its layout, then " +
                                  std::to_string(sizeof...(A)) +
                                  " parameter(s) worth of arguments as the layout says");
    return invoke_listed(fn, values, layout, std::index_sequence_for<A...>{});
  };
}

template <class R, class... A>
Invoker make_invoker(R (*fn)(A...)) {
  return [fn](const std::vector<Value>& values) -> Value {
    if (values.size() != sizeof...(A))
      throw std::invalid_argument("expects " + std::to_string(sizeof...(A)) + " argument(s), got " +
                                  std::to_string(values.size()));
    return invoke_with(fn, values, std::index_sequence_for<A...>{});
  };
}

template <class R, class... A>
EachInvoker make_each_invoker(R (*fn)(A...)) {
  if constexpr (sizeof...(A) != 1 || std::is_void_v<R>) {
    return {};
  } else {
    return [fn](const Frame& frame, std::size_t& at) -> Frame {
      std::vector<arg_t<A>...> inputs;
      try {
        from_frame(frame, inputs);
      } catch (const SerializationError& e) {
        throw std::invalid_argument(std::string("a batch cannot be decoded as a vector of the "
                                                "function's parameter type: ") + e.what());
      }
      std::vector<std::remove_cvref_t<R>> out;
      out.reserve(inputs.size());
      using A0 = std::tuple_element_t<0, std::tuple<A...>>;
      for (at = 0; at < inputs.size(); ++at) {
        if constexpr (std::is_lvalue_reference_v<A0>) out.push_back(fn(inputs[at]));
        else out.push_back(fn(std::move(inputs[at])));
      }
      return to_frame(out);
    };
  }
}

template <class R, class V, class... Rest>
GatherInvoker make_gather_invoker(R (*fn)(V, Rest...)) {
  using Vec = arg_t<V>;
  if constexpr (!is_vector<Vec>::value || std::is_void_v<R>) {
    return {};
  } else {
    return [fn](const std::vector<Frame>& parts, const std::vector<std::uint8_t>& batch,
                const std::vector<Frame>& rest) -> Frame {
      if (parts.size() != batch.size() || rest.size() != sizeof...(Rest))
        throw std::invalid_argument("expects " + std::to_string(sizeof...(Rest)) +
                                    " parameter(s) after the vector and one batch flag per part");
      Vec all;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        try {
          if (batch[i]) {
            Vec b;
            from_frame(parts[i], b);
            all.insert(all.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
          } else {
            all.push_back(from_frame<typename Vec::value_type>(parts[i]));
          }
        } catch (const SerializationError& e) {
          throw std::invalid_argument("part " + std::to_string(i) + " cannot be decoded as the " +
                                      "vector's element type: " + e.what());
        }
      }
      std::tuple<arg_t<Rest>...> args;
      decode_args(args, rest, std::index_sequence_for<Rest...>{});
      return to_frame(std::apply(
          [&](auto&... r) { return fn(std::forward<V>(all), std::forward<Rest>(r)...); }, args));
    };
  }
}
template <class R>
GatherInvoker make_gather_invoker(R (*)()) {
  return {};
}

/// The fully qualified name of a function, taken from the compiler's spelling of the template
/// argument in __PRETTY_FUNCTION__ (GCC: "[with auto F = ns::f; ...]", Clang: "[F = &ns::f]"),
/// so that TASKWIRE_REGISTER(ns::f) and TASKWIRE_REGISTER(f) inside namespace ns give one name.
/// Anonymous namespaces are left out of it ("ns::{anonymous}::f" is "ns::f").
std::string canonical_function_name(std::string_view pretty_function);

template <auto F>
std::string qualified_name_of() {
  return canonical_function_name(__PRETTY_FUNCTION__);
}

/// Parts of a result (Client::getitem, Client::unpack): built-in functions that copy out one
/// element of a std::vector, std::array, std::tuple or std::pair, reading the whole by
/// `const C&` (in place, on the worker holding it). Registered per container type, under a
/// name made of the type's mangled name, so every process built by the same compiler agrees:
/// by TASKWIRE_REGISTER for each function's result and parameter types, and by the client
/// code that asks for parts (for the processes running the same binary).
template <class C>
struct ItemAccess : std::false_type {};
template <class T, class Alloc>
struct ItemAccess<std::vector<T, Alloc>> : std::true_type {
  static constexpr bool kRuntimeIndex = true;
};
template <class T, std::size_t N>
struct ItemAccess<std::array<T, N>> : std::true_type {
  static constexpr bool kRuntimeIndex = true;
};
template <class... T>
struct ItemAccess<std::tuple<T...>> : std::true_type {
  static constexpr bool kRuntimeIndex = false;
};
template <class A, class B>
struct ItemAccess<std::pair<A, B>> : std::true_type {
  static constexpr bool kRuntimeIndex = false;
};

/// The registered name of part access on a C: element i (an argument) of a vector or array,
/// or, with `index`, the fixed element of a tuple or pair.
template <class C>
std::string item_function_name(std::optional<std::size_t> index = std::nullopt) {
  auto name = std::string("taskwire::getitem<") + typeid(C).name() + ">";
  return index ? name + "[" + std::to_string(*index) + "]" : name;
}

/// True for a name item_function_name gave: a task that reads a part of its one input.
inline bool is_item_function(std::string_view name) {
  return name.substr(0, 18) == "taskwire::getitem<";
}

template <class C>
typename C::value_type item_at(const C& whole, std::uint64_t i) {
  if (i >= whole.size())
    throw std::out_of_range("getitem: index " + std::to_string(i) + " past the " +
                            std::to_string(whole.size()) + " element(s) of the result");
  return whole[static_cast<std::size_t>(i)];
}
template <class C, std::size_t I>
std::tuple_element_t<I, C> item_get(const C& whole) {
  return std::get<I>(whole);
}

template <class C>
void register_items() {
  if constexpr (ItemAccess<C>::value) {
    auto& registry = FunctionRegistry::global();
    if constexpr (ItemAccess<C>::kRuntimeIndex) {
      constexpr auto fn = &item_at<C>;
      registry.add(item_function_name<C>(), reinterpret_cast<const void*>(fn), 2,
                   make_invoker(fn));
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((registry.add(item_function_name<C>(I), reinterpret_cast<const void*>(&item_get<C, I>), 1,
                       make_invoker(&item_get<C, I>))),
         ...);
      }(std::make_index_sequence<std::tuple_size_v<C>>{});
    }
  }
}

struct Registrar {
  template <class R, class... A>
  Registrar(std::string name, R (*fn)(A...)) {
    using Result = std::conditional_t<std::is_void_v<R>, bool, std::remove_cvref_t<R>>;
    // An unsendable parameter or result stops here, with check_sendable's one message.
    if constexpr (check_sendable<Result, arg_t<A>...>()) {
      auto& registry = FunctionRegistry::global();
      registry.add(name, reinterpret_cast<const void*>(fn), sizeof...(A), make_invoker(fn),
                   make_each_invoker(fn), make_gather_invoker(fn));
      if constexpr ((is_vector<arg_t<A>>::value || ...))
        registry.add_list_form(name, sizeof...(A) + 1, make_list_invoker(fn));
      register_items<Result>();  // Client::getitem on its results, and on its inputs'
      (register_items<arg_t<A>>(), ...);
    }
  }
};

}  // namespace detail
}  // namespace taskwire::runtime

#define TASKWIRE_CONCAT_INNER(a, b) a##b
#define TASKWIRE_CONCAT(a, b) TASKWIRE_CONCAT_INNER(a, b)
/// Registers a free function (or a static member function) under its fully qualified name
/// (namespaces and classes included, anonymous namespaces left out, however the argument is
/// spelled), so every process agrees on it. Only functions can be registered: a lambda or a functor has no name another process
/// could find it by. Use at namespace scope, in a file every process links or --preload's.
#define TASKWIRE_REGISTER(fn)                                                            \
  static const ::taskwire::runtime::detail::Registrar TASKWIRE_CONCAT(taskwire_reg_,     \
                                                                      __COUNTER__) {     \
    ::taskwire::runtime::detail::qualified_name_of<&fn>(), &fn                           \
  }
