// pld — address-free dispatch arguments (internal; included by host.hpp).
//
// The rank processes are forked before a dispatch is built, so nothing with an address may cross:
// a HostTensor view travels as (shared block id, byte offset, shape), a window view as
// (domain, buffer, offset, shape), a scalar by value. Each kernel parameter type has an ArgCodec;
// a pointer parameter is a compile-time error.
#pragma once

#include <pld/device_tensor.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/tensor.hpp>
#include <pld/window.hpp>

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace pld::detail {

/// A window view passed to a dispatch, as the host checks it before recording.
struct WindowArg {
  WindowRef ref;
  Dims shape;
  DType dtype = DType::FP32;
};

/// The bytes of a HostTensor block one argument views: [offset, offset + bytes).
struct BlockSpan {
  std::uint32_t id = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

class ArgWriter {
 public:
  template <class T>
  void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  void note_block(std::uint32_t id, std::uint64_t offset, std::uint64_t bytes) {
    blocks_.push_back({id, offset, bytes});
  }
  void note_window(const WindowRef& ref, const Dims& shape, DType dtype) { windows_.push_back({ref, shape, dtype}); }
  void note_device(const std::shared_ptr<DeviceAllocation>& a) { devices_.push_back(a); }
  std::vector<std::byte>& bytes() { return bytes_; }
  const std::vector<BlockSpan>& blocks() const { return blocks_; }
  const std::vector<WindowArg>& windows() const { return windows_; }
  const std::vector<std::shared_ptr<DeviceAllocation>>& devices() const { return devices_; }

 private:
  std::vector<std::byte> bytes_;
  std::vector<BlockSpan> blocks_;
  std::vector<WindowArg> windows_;
  std::vector<std::shared_ptr<DeviceAllocation>> devices_;
};

class ArgReader {
 public:
  ArgReader(const std::byte* data, std::size_t size) : p_(data), end_(data + size) {}
  template <class T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (static_cast<std::size_t>(end_ - p_) < sizeof(T)) throw_usage("dispatch: truncated argument frame (internal)");
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  /// The next `n` bytes, copied to `out`.
  void bytes(void* out, std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) throw_usage("dispatch: truncated argument frame (internal)");
    if (n) std::memcpy(out, p_, n);
    p_ += n;
  }

 private:
  const std::byte* p_;
  const std::byte* end_;
};

/// Rank side: local address of a shared block (maps it on first use).
PLD_API std::byte* rank_block_base(std::uint32_t id);
/// Rank side: local address of a resident (DeviceTensor) allocation.
PLD_API std::byte* rank_device_base(std::uint32_t id);
/// Rank side: state of a comm domain delivered with the dispatch.
PLD_API const DomainState* rank_domain(std::uint32_t id);
[[noreturn]] PLD_API void throw_unshared_tensor(int arg_index);

/// Scalars and other trivially copyable, pointer-free values travel by value.
template <class T>
struct ArgCodec {
  static_assert(!std::is_pointer_v<T> && !std::is_member_pointer_v<T>,
                "pld::Host::dispatch: pointer parameters are not address-free; pass a pld::Tensor, a "
                "pld::DistributedTensor or a value");
  static_assert(std::is_trivially_copyable_v<T>,
                "pld::Host::dispatch: kernel parameters must be pld::Tensor, pld::DistributedTensor or "
                "trivially copyable values");
  static void encode(ArgWriter& w, const T& v, int) { w.value(v); }
  static T decode(ArgReader& r) { return r.template value<T>(); }
};

template <class T>
struct ArgCodec<Tensor<T>> {
  static void encode(ArgWriter& w, const Tensor<T>& t, int arg_index) {
    if (t.block() == 0 && t.numel() > 0) throw_unshared_tensor(arg_index);
    w.note_block(t.block(), t.block_offset(), static_cast<std::uint64_t>(t.numel()) * sizeof(T));
    w.value(t.block());
    w.value(t.block_offset());
    w.value(t.shape());
  }
  /// A resident tensor reaches the kernel as a Tensor of the rank's own memory (no copy).
  static void encode(ArgWriter& w, const DeviceTensor<T>& t, int) {
    if (!t.allocation())
      throw_usage(
          "Host::dispatch: a default-constructed DeviceTensor; allocate it with "
          "DistributedWorker::alloc_tensor");
    check_device_live("Host::dispatch", *t.allocation());
    w.note_device(t.allocation());
    w.value(t.allocation()->id | kDeviceBlockBit);
    w.value(std::uint64_t{0});
    w.value(t.shape());
  }
  static Tensor<T> decode(ArgReader& r) {
    const auto block = r.template value<std::uint32_t>();
    const auto offset = r.template value<std::uint64_t>();
    const auto shape = r.template value<Dims>();
    std::byte* base = (block & kDeviceBlockBit) ? rank_device_base(block & ~kDeviceBlockBit)
                      : block                   ? rank_block_base(block)
                                                : nullptr;
    return Tensor<T>(base ? reinterpret_cast<T*>(base + offset) : nullptr, shape, block, offset);
  }
};

template <class T>
struct ArgCodec<DistributedTensor<T>> {
  static void encode(ArgWriter& w, const DistributedTensor<T>& t, int) {
    w.note_window(t.ref(), t.shape(), dtype_of<T>);
    w.value(t.ref());
    w.value(t.shape());
  }
  static DistributedTensor<T> decode(ArgReader& r) {
    const auto ref = r.template value<WindowRef>();
    const auto shape = r.template value<Dims>();
    return Access::make<DistributedTensor<T>>(ref, shape, rank_domain(ref.domain));
  }
};

/// Entry point of a dispatch in the rank: decodes the arguments left to right and calls `fn`.
using Trampoline = void (*)(void (*fn)(), ArgReader& reader);

template <class... P>
void trampoline(void (*fn)(), ArgReader& reader) {
  auto kernel = reinterpret_cast<void (*)(P...)>(fn);
  std::tuple<std::decay_t<P>...> args{ArgCodec<std::decay_t<P>>::decode(reader)...};
  std::apply(kernel, args);
}

/// Encodes one argument for a parameter of type `P`: a resident tensor as itself, anything else
/// converted to `P` first.
template <class P, class A>
void encode_one(ArgWriter& w, A&& arg, int index) {
  if constexpr (requires { ArgCodec<P>::encode(w, std::as_const(arg), index); } && !std::is_convertible_v<A, P>)
    ArgCodec<P>::encode(w, std::as_const(arg), index);
  else
    ArgCodec<P>::encode(w, static_cast<P>(std::forward<A>(arg)), index);
}

template <class... P, class... A, std::size_t... I>
void encode_args(ArgWriter& w, std::index_sequence<I...>, A&&... args) {
  (encode_one<std::decay_t<P>>(w, std::forward<A>(args), static_cast<int>(I)), ...);
}

}  // namespace pld::detail
