#include <taskwire/comm/tls/tls_io.hpp>

#include <boost/asio/ssl/error.hpp>
#include <openssl/bio.h>
#include <openssl/err.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <climits>
#include <vector>

namespace taskwire::comm::tls {
namespace {

// With read-ahead OpenSSL fills this buffer with as many records as the socket holds, so a
// stream of records costs one recv per buffer, not two (header, body) per record.
constexpr std::size_t kReadAheadBytes = 64 * 1024;

// While corked, records collect up to this many bytes before they are sent together.
constexpr std::size_t kCorkBytes = 256 * 1024;

// The socket BIO's state: the descriptor (not owned), whether the input saw the end of
// stream (BIO_eof, which OpenSSL asks to tell an end of stream from an error), the errno of
// the last failed call (for ssl_outcome's SSL_ERROR_SYSCALL), the records collected while
// corked, out[sent, size) not yet sent, and once reads go through the comm's socket reads
// (read_through_buffer), what they brought, in[in_begin, in_end) not yet taken by OpenSSL,
// and the errno that ended them.
struct SocketBio {
  int fd = -1;
  bool eof = false;
  int last_errno = 0;
  bool corked = false;
  std::vector<char> out;
  std::size_t sent = 0;
  bool buffered_reads = false;
  std::vector<char> in;
  std::size_t in_begin = 0, in_end = 0;
  int input_errno = 0;
  bool socket_may_have_more = false;  // the last socket read filled all it was given
};

SocketBio* state_of(BIO* bio) { return static_cast<SocketBio*>(BIO_get_data(bio)); }

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// One send; false with last_errno set when it failed.
bool send_some(SocketBio* s, const char* data, std::size_t n, std::size_t* sent) {
  ssize_t r;
  do r = ::send(s->fd, data, n, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    s->last_errno = errno;
    return false;
  }
  *sent = static_cast<std::size_t>(r);
  return true;
}

// Sends the collected records; false when the socket did not take them all.
bool send_collected(SocketBio* s) {
  while (s->sent < s->out.size()) {
    std::size_t n = 0;
    if (!send_some(s, s->out.data() + s->sent, s->out.size() - s->sent, &n)) return false;
    s->sent += n;
  }
  s->out.clear();
  s->sent = 0;
  return true;
}

int bio_write(BIO* bio, const char* data, std::size_t n, std::size_t* written) {
  auto* s = state_of(bio);
  BIO_clear_retry_flags(bio);
  s->last_errno = 0;
  // Collected records go first: uncorked at once, corked once this record would overflow
  // them (and when the socket does not take them all, the record joins what is left if it
  // fits).
  const bool full = s->out.size() - s->sent + n > kCorkBytes;
  if ((!s->corked || full) && !send_collected(s)) {
    const bool fits = s->corked && s->out.size() - s->sent + n <= kCorkBytes;
    if (!would_block(s->last_errno) || !fits) {
      if (would_block(s->last_errno)) BIO_set_retry_write(bio);
      return 0;
    }
  }
  if (!s->corked) {
    if (send_some(s, data, n, written)) return 1;
    if (would_block(s->last_errno)) BIO_set_retry_write(bio);
    return 0;
  }
  if (s->sent > 0) {
    s->out.erase(s->out.begin(), s->out.begin() + static_cast<std::ptrdiff_t>(s->sent));
    s->sent = 0;
  }
  s->out.insert(s->out.end(), data, data + n);
  *written = n;
  return 1;
}

// One recv into `data`; false with last_errno set when it failed (eof set at the end of
// stream).
bool recv_some(SocketBio* s, char* data, std::size_t n, std::size_t* read) {
  ssize_t r;
  do r = ::recv(s->fd, data, n, 0);
  while (r < 0 && errno == EINTR);
  if (r > 0) {
    *read = static_cast<std::size_t>(r);
    return true;
  }
  if (r == 0) s->eof = true;
  else s->last_errno = errno;
  return false;
}

// With buffered reads, what the comm's socket reads brought; once that is taken, a retry
// (the comm reads the socket again) or the end the socket read met. While the socket had
// more than the last read took (a stream of records), OpenSSL reads it directly instead,
// into its own buffer, sparing a copy, until a read comes back short.
int bio_read_buffered(BIO* bio, SocketBio* s, char* data, std::size_t n, std::size_t* read) {
  if (s->in_begin < s->in_end) {
    n = std::min(n, s->in_end - s->in_begin);
    std::memcpy(data, s->in.data() + s->in_begin, n);
    s->in_begin += n;
    *read = n;
    return 1;
  }
  if (s->socket_may_have_more && s->input_errno == 0 && !s->eof) {
    if (recv_some(s, data, n, read)) {
      s->socket_may_have_more = *read == n;
      return 1;
    }
    s->socket_may_have_more = false;
    if (!would_block(s->last_errno)) s->input_errno = s->last_errno;
  }
  s->last_errno = s->input_errno;
  if (!s->eof && s->input_errno == 0) BIO_set_retry_read(bio);
  return 0;
}

int bio_read(BIO* bio, char* data, std::size_t n, std::size_t* read) {
  auto* s = state_of(bio);
  BIO_clear_retry_flags(bio);
  s->last_errno = 0;
  if (s->buffered_reads) return bio_read_buffered(bio, s, data, n, read);
  if (recv_some(s, data, n, read)) return 1;
  if (would_block(s->last_errno)) BIO_set_retry_read(bio);
  return 0;
}

long bio_ctrl(BIO* bio, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;  // nothing is buffered here
    case BIO_CTRL_EOF: return state_of(bio)->eof ? 1 : 0;
    default: return 0;
  }
}

int bio_create(BIO* bio) {
  BIO_set_data(bio, new SocketBio);
  BIO_set_init(bio, 1);
  return 1;
}

int bio_destroy(BIO* bio) {
  delete state_of(bio);
  BIO_set_data(bio, nullptr);
  return 1;
}

const BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "taskwire socket");
    if (!m) return m;
    BIO_meth_set_write_ex(m, &bio_write);
    BIO_meth_set_read_ex(m, &bio_read);
    BIO_meth_set_ctrl(m, &bio_ctrl);
    BIO_meth_set_create(m, &bio_create);
    BIO_meth_set_destroy(m, &bio_destroy);
    return m;
  }();
  return method;
}

[[noreturn]] void no_session(const char* what) {
  const char* reason = ERR_reason_error_string(ERR_get_error());
  throw CommError(make_error_code(errc::io),
                  std::string("tls: ") + what + ": " + (reason ? reason : "no reason given"));
}

}  // namespace

std::unique_ptr<TlsStream> make_tls_stream(tcp::Socket socket, asio::ssl::context& context) {
  error_code ec;
  socket.non_blocking(true, ec);
  if (ec) throw CommError(make_error_code(errc::io), "tls: non-blocking socket: " + ec.message());
  SslPtr ssl(SSL_new(context.native_handle()));
  if (!ssl) no_session("cannot make a TLS session");
  const BIO_METHOD* method = socket_bio_method();
  BIO* bio = method ? BIO_new(method) : nullptr;
  if (!bio) no_session("cannot make a socket BIO");
  state_of(bio)->fd = socket.native_handle();
  SSL_set_bio(ssl.get(), bio, bio);  // the session owns the BIO
  // Partial writes: a large buffer is taken record by record, so a writer that must wait
  // for the socket knows how much went out; the retry then names the rest of the same buffer.
  SSL_set_mode(ssl.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_read_ahead(ssl.get(), 1);
  SSL_set_default_read_buffer_len(ssl.get(), kReadAheadBytes);
  return std::make_unique<TlsStream>(TlsStream{std::move(socket), std::move(ssl)});
}

void clear_ssl_errors() noexcept {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

void read_through_buffer(SSL* ssl) {
  auto* s = state_of(SSL_get_rbio(ssl));
  s->buffered_reads = true;
  s->in.resize(kReadAheadBytes);
}

std::span<char> input_space(SSL* ssl) {
  auto* s = state_of(SSL_get_rbio(ssl));
  if (s->in_begin == s->in_end) s->in_begin = s->in_end = 0;
  return {s->in.data() + s->in_end, s->in.size() - s->in_end};
}

void input_received(SSL* ssl, std::size_t n) {
  auto* s = state_of(SSL_get_rbio(ssl));
  s->in_end += n;
  s->socket_may_have_more = s->in_end == s->in.size();
}

void input_failed(SSL* ssl, const error_code& ec) {
  auto* s = state_of(SSL_get_rbio(ssl));
  if (ec == asio::error::eof) s->eof = true;
  else s->input_errno = ec.category() == boost::system::system_category() ? ec.value() : EIO;
}

bool nothing_to_read(SSL* ssl) {
  const auto* s = state_of(SSL_get_rbio(ssl));
  return s->buffered_reads && s->in_begin == s->in_end && !s->eof && s->input_errno == 0 &&
         !s->socket_may_have_more && SSL_has_pending(ssl) == 0 && SSL_want(ssl) != SSL_WRITING;
}

void cork(SSL* ssl, bool on) { state_of(SSL_get_wbio(ssl))->corked = on; }

SslOutcome flush(SSL* ssl) {
  auto* s = state_of(SSL_get_wbio(ssl));
  s->last_errno = 0;
  if (send_collected(s)) return {SslOutcome::done, {}};
  if (would_block(s->last_errno)) return {SslOutcome::want_write, {}};
  return {SslOutcome::failed, error_code(s->last_errno, boost::system::system_category())};
}

SslOutcome ssl_outcome(SSL* ssl, int ret) {
  const int kind = SSL_get_error(ssl, ret);
  switch (kind) {
    case SSL_ERROR_NONE: return {SslOutcome::done, {}};
    case SSL_ERROR_WANT_READ: return {SslOutcome::want_read, {}};
    case SSL_ERROR_WANT_WRITE: return {SslOutcome::want_write, {}};
    case SSL_ERROR_ZERO_RETURN: return {SslOutcome::failed, asio::error::eof};
    default: break;
  }
  const unsigned long queued = ERR_get_error();
  // A peer that ends the TCP stream without close_notify: OpenSSL 3 reports it as this
  // reason, Asio's stream as stream_truncated.
  if (queued == 0 || ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    auto* bio = SSL_get_rbio(ssl);
    const SocketBio* s = bio ? state_of(bio) : nullptr;
    if (kind == SSL_ERROR_SYSCALL && s && !s->eof && s->last_errno != 0)
      return {SslOutcome::failed, error_code(s->last_errno, boost::system::system_category())};
    return {SslOutcome::failed, asio::ssl::error::stream_truncated};
  }
  return {SslOutcome::failed,
          error_code(static_cast<int>(queued), asio::error::get_ssl_category())};
}

}  // namespace taskwire::comm::tls
