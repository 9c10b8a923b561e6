#include <taskwire/runtime/function_registry.hpp>

namespace taskwire::runtime {

namespace {
int identity_tag;  // its address stands for the built-in identity function
}  // namespace

FunctionRegistry& FunctionRegistry::global() {
  static FunctionRegistry r;
  static const bool builtins = [] {
    // Built in: returns its one argument unchanged (Client::scatter uses it): the bytes
    // scattered stay bytes until a task here reads them.
    r.add("taskwire::identity", &identity_tag, 1, Invoker([](const std::vector<Value>& args) {
            if (args.size() != 1) throw std::invalid_argument("expects 1 argument");
            return args[0];
          }));
    return true;
  }();
  (void)builtins;
  return r;
}

void FunctionRegistry::add(std::string name, const void* address, std::size_t arity,
                           Invoker invoke, EachInvoker each, GatherInvoker gathered) {
  std::lock_guard lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    auto known = by_address_.find(address);
    if (known != by_address_.end() && known->second == name) return;
    // The same name from another copy of the code (e.g. the library linked into the program
    // and also --preload'ed): keep the first, remember the alias for name_of().
    if (it->second.arity == arity) {
      by_address_.emplace(address, name);
      return;
    }
    throw std::logic_error("TASKWIRE_REGISTER: two different functions named '" + name + "'");
  }
  by_address_.emplace(address, name);
  by_name_.emplace(name, RegisteredFunction{name, arity, std::move(invoke), std::move(each),
                                            std::move(gathered)});
}

void FunctionRegistry::add(std::string name, const void* address, std::size_t arity,
                           FrameInvoker invoke) {
  add(std::move(name), address, arity, Invoker([invoke = std::move(invoke)](const std::vector<Value>& args) {
        std::vector<Frame> frames;
        frames.reserve(args.size());
        for (const auto& a : args) frames.push_back(a.bytes());
        return Value(invoke(frames));
      }));
}

void FunctionRegistry::add_list_form(const std::string& name, std::size_t arity, Invoker invoke) {
  std::lock_guard lock(mu_);
  const auto list_name = list_form_name(name);
  // A second registration (a library loaded twice) keeps the first, as add() does.
  list_forms_.try_emplace(list_name,
                          RegisteredFunction{list_name, arity, std::move(invoke), {}, {}});
}

const RegisteredFunction* FunctionRegistry::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  if (auto it = by_name_.find(name); it != by_name_.end()) return &it->second;
  auto it = list_forms_.find(name);
  return it == list_forms_.end() ? nullptr : &it->second;
}

std::string FunctionRegistry::name_of(const void* address) const {
  std::lock_guard lock(mu_);
  auto it = by_address_.find(address);
  if (it == by_address_.end())
    throw std::invalid_argument(
        "this function is not registered: add TASKWIRE_REGISTER(fn) next to its definition "
        "in a file linked into every process (or loaded with --preload)");
  return it->second;
}

namespace detail {

std::string canonical_function_name(std::string_view pretty) {
  // GCC: "... [with auto F = ns::f; std::string = ...]"; Clang: "... [F = &ns::f]".
  auto start = pretty.find("F = ");
  if (start == std::string_view::npos)
    throw std::logic_error("TASKWIRE_REGISTER: cannot read the function's name from '" +
                           std::string(pretty) + "' (an unknown compiler?)");
  start += 4;
  if (start < pretty.size() && pretty[start] == '&') ++start;
  auto end = pretty.find_first_of(";]", start);
  std::string name(pretty.substr(start, end == std::string_view::npos ? end : end - start));
  // An anonymous namespace adds nothing to the name (as the code calling the function spells
  // it), whichever compiler's spelling: GCC's or Clang's.
  for (std::string_view anonymous : {"{anonymous}::", "(anonymous namespace)::"})
    for (auto at = name.find(anonymous); at != std::string::npos; at = name.find(anonymous))
      name.erase(at, anonymous.size());
  return name;
}

}  // namespace detail

std::vector<std::string> FunctionRegistry::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : by_name_) out.push_back(k);
  return out;
}

}  // namespace taskwire::runtime
