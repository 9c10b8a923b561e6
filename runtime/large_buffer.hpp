#pragma once
// Memory for big arrays that is reused from task to task.
//
// glibc gives every block a thread's arena cannot hold (above ~64 MiB, and in practice any
// block of tens of MiB allocated off the main thread) fresh pages, which the kernel faults in
// and clears: in `taskwire-bench array` (50 MB blocks) that was 40 % of a worker's time. Frames
// of kLargeBufferBytes and more already come from a cache of freed buffers (frame.cpp); the
// same cache serves a task's own big arrays through BufferAllocator, so a worker that decodes,
// builds and frees one block after another keeps reusing the same memory. With jemalloc (the
// default build) malloc itself keeps freed pages for reuse, and these buffers are plain malloc.
#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace taskwire::runtime {

/// Buffers this large and larger are kept once freed (up to 512 MiB in all, per process)
/// unless jemalloc serves malloc.
inline constexpr std::size_t kLargeBufferBytes = std::size_t{16} << 20;

/// At least `bytes` of uninitialised memory, aligned for any fundamental type: a kept buffer
/// when `bytes` >= kLargeBufferBytes, one of about that size is free and jemalloc does not
/// serve malloc, else from malloc.
/// Throws std::bad_alloc.
void* allocate_buffer(std::size_t bytes);
/// Frees what allocate_buffer(bytes) returned; pass the same `bytes`.
void deallocate_buffer(void* p, std::size_t bytes) noexcept;
/// Frees the buffers kept for reuse (a worker near its memory limit wants the memory back).
void release_kept_buffers() noexcept;

/// A standard allocator over allocate_buffer that leaves new elements default-initialised
/// (a resize() of doubles does not zero them: they are about to be written, by a
/// computation or by decoding a frame). For big arrays in the types tasks take and return:
///   struct Block { std::vector<double, taskwire::runtime::BufferAllocator<double>> data; };
template <class T>
struct BufferAllocator {
  static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned types are not supported");
  using value_type = T;

  BufferAllocator() = default;
  template <class U>
  BufferAllocator(const BufferAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_buffer(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { deallocate_buffer(p, n * sizeof(T)); }

  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }

  template <class U>
  bool operator==(const BufferAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace taskwire::runtime
