// The archive-free path of to_frame/from_frame (serialize.hpp, detail::is_raw_encoded),
// compiled here once for each of its types, so that a program including serialize.hpp does
// not compile the codec.
#include <taskwire/runtime/raw_codec.hpp>
#include <taskwire/runtime/serialize.hpp>

namespace taskwire::runtime::detail {

template <class T>
Frame raw_to_frame(const T& value) {
  static_assert(raw_codec::handles<T>, "is_raw_encoded names a type the codec does not handle");
  auto frame = Frame::allocate(raw_codec::encoded_size(value));
  raw_codec::encode(value, frame.mutable_data());
  return frame;
}

template <class T>
bool raw_from_frame(const Frame& frame, T& value) {
  return raw_codec::decode(frame.data(), frame.size(), value);
}

#define TASKWIRE_RAW_ENCODED(T)                                      \
  static_assert(is_raw_encoded<T>);                                  \
  template Frame raw_to_frame<T>(const T& value);                    \
  template bool raw_from_frame<T>(const Frame& frame, T& value);
#define TASKWIRE_RAW_NUMBER(N) \
  TASKWIRE_RAW_ENCODED(N)      \
  TASKWIRE_RAW_ENCODED(std::vector<N>)

TASKWIRE_RAW_ENCODED(bool)  // std::vector<bool> is Boost's own case (raw_codec.hpp)
TASKWIRE_RAW_ENCODED(std::string)
TASKWIRE_RAW_NUMBER(char)
TASKWIRE_RAW_NUMBER(signed char)
TASKWIRE_RAW_NUMBER(unsigned char)
TASKWIRE_RAW_NUMBER(wchar_t)
TASKWIRE_RAW_NUMBER(char8_t)
TASKWIRE_RAW_NUMBER(char16_t)
TASKWIRE_RAW_NUMBER(char32_t)
TASKWIRE_RAW_NUMBER(short)
TASKWIRE_RAW_NUMBER(unsigned short)
TASKWIRE_RAW_NUMBER(int)
TASKWIRE_RAW_NUMBER(unsigned)
TASKWIRE_RAW_NUMBER(long)
TASKWIRE_RAW_NUMBER(unsigned long)
TASKWIRE_RAW_NUMBER(long long)
TASKWIRE_RAW_NUMBER(unsigned long long)
TASKWIRE_RAW_NUMBER(float)
TASKWIRE_RAW_NUMBER(double)
TASKWIRE_RAW_NUMBER(long double)

#undef TASKWIRE_RAW_NUMBER
#undef TASKWIRE_RAW_ENCODED

}  // namespace taskwire::runtime::detail
