#pragma once
// The one way taskwire includes Boost.Asio. With g++ 12, boost/asio/awaitable.hpp uses
// std::exchange without including <utility>; include it first so every TU sees the same thing.
#include <utility>
#include <boost/asio.hpp>

namespace taskwire {
namespace asio = boost::asio;
using error_code = boost::system::error_code;
}  // namespace taskwire
