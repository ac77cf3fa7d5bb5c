#include "host/session.h"

#include "coll/tuning.h"
#include "core/block.h"

#include <pld/detail/checked.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <optional>

namespace pld::detail {

namespace {
constexpr std::size_t kMaxArgBytes = 48 * 1024;

std::uint32_t next_call() {
  static std::atomic<std::uint32_t> counter{0};
  return ++counter;
}
}  // namespace

HostSession::HostSession(int world_size, std::uint64_t heap_bytes)
    : call_(next_call()),
      world_size_(world_size),
      heap_bytes_(heap_bytes),
      heap_top_(static_cast<std::size_t>(world_size), 0) {
  std::vector<int> all(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) all[static_cast<std::size_t>(r)] = r;
  domain_create(all);
}

WindowBuffer HostSession::alloc(std::uint32_t domain, std::uint64_t bytes, const std::string& name,
                                std::optional<DType> dtype) {
  DomainRecord& d = domains_.at(domain);
  if (name.rfind("pld.", 0) == 0 && name != kBuiltinSignalName && name != kCollStagingName)
    throw UsageError(
        fmt::format("alloc_window_buffer('{}'): names starting with 'pld.' are reserved for pld's own "
                    "windows; pick another name",
                    name));
  const std::string real_name = name.empty() ? fmt::format("window{}", d.buffers.size()) : name;
  for (const BufferInfo& b : d.buffers)
    if (b.name == real_name)
      throw UsageError(
          fmt::format("alloc_window_buffer: a buffer named '{}' already exists in comm domain {}; give "
                      "each buffer a unique name",
                      real_name, d.label));
  std::uint64_t offset = 0;
  if (layout_) {
    offset = place_persistent(d, bytes, real_name);
    for (int r : d.members)
      heap_top_[static_cast<std::size_t>(r)] = std::max(heap_top_[static_cast<std::size_t>(r)], offset + bytes);
  } else {
    // Symmetric: the same offset on every member, above everything any member already uses.
    for (int r : d.members) offset = std::max(offset, heap_top_[static_cast<std::size_t>(r)]);
    offset = (offset + kWindowAlignment - 1) / kWindowAlignment * kWindowAlignment;
    if (bytes > heap_bytes_ || offset > heap_bytes_ - bytes)
      throw UsageError(
          fmt::format("alloc_window_buffer('{}', {} bytes): does not fit the window heap of {} bytes "
                      "per rank ({} already in use in comm domain {}); raise "
                      "DistributedConfig::heap_bytes or PLD_HEAP_BYTES, or allocate less (the size is in "
                      "bytes, not elements)",
                      real_name, bytes, heap_bytes_, offset, d.label));
    for (int r : d.members) heap_top_[static_cast<std::size_t>(r)] = offset + bytes;
  }
  const auto id = static_cast<std::uint32_t>(d.buffers.size());
  d.buffers.push_back(BufferInfo{offset, bytes, real_name});
  d.typed.push_back(dtype);
  return WindowBuffer{WindowRef{call_, domain, id, offset, bytes}, real_name};
}

std::uint64_t HostSession::place_persistent(const DomainRecord& d, std::uint64_t bytes, const std::string& name) {
  PersistentLayout& L = *layout_;
  std::lock_guard lock(L.mutex_);
  auto& dom = L.domains_[PersistentLayout::Key{program_, d.members, ordinal_of(d)}];
  const bool reserved = name.rfind("pld.", 0) == 0;
  auto it = dom.buffers.find(name);
  if (it != dom.buffers.end() && reserved && it->second.bytes != bytes) {
    dom.buffers.erase(it);  // pld's own buffer changed size (staging channels): place it anew
    it = dom.buffers.end();
  }
  if (it != dom.buffers.end()) {
    if (it->second.bytes != bytes)
      throw UsageError(
          fmt::format("alloc_window_buffer('{}', {} bytes): changed specification — in comm domain {} "
                      "this persistent buffer has {} bytes from an earlier call; a persistent worker "
                      "keeps windows for its lifetime, so keep the size fixed (or use a worker without "
                      "WorkerOptions::persistent)",
                      name, bytes, d.label, it->second.bytes));
    placed_.push_back(Placed{d.id, it->second, false});
    return it->second.offset;
  }
  if (dom.sealed && !reserved)
    throw UsageError(
        fmt::format("alloc_window_buffer('{}', {} bytes): changed specification — comm domain {} of "
                    "this persistent worker had no buffer '{}' in earlier calls; allocate the same "
                    "buffers in every call (or use a worker without WorkerOptions::persistent)",
                    name, bytes, d.label, name));
  std::uint64_t offset = 0;
  for (int r : d.members) offset = std::max(offset, L.top_[static_cast<std::size_t>(r)]);
  offset = (offset + kWindowAlignment - 1) / kWindowAlignment * kWindowAlignment;
  if (bytes > heap_bytes_ || offset > heap_bytes_ - bytes)
    throw UsageError(
        fmt::format("alloc_window_buffer('{}', {} bytes): does not fit the window heap of {} bytes per "
                    "rank ({} already kept by this persistent worker's buffers); raise "
                    "DistributedConfig::heap_bytes or PLD_HEAP_BYTES, or allocate less",
                    name, bytes, heap_bytes_, offset));
  for (int r : d.members) L.top_[static_cast<std::size_t>(r)] = offset + bytes;
  const BufferInfo info{offset, bytes, name};
  dom.buffers.emplace(name, info);
  placed_.push_back(Placed{d.id, info, true});
  return offset;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> HostSession::zero_regions(int rank) const {
  if (!layout_) return {{0, heap_top(rank)}};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const Placed& p : placed_)
    // pld's LL staging is always cleared: its epochs restart with every call.
    if ((p.fresh || layout_->reset() || p.info.name == kCollStagingName) &&
        domains_[p.domain].local_of[static_cast<std::size_t>(rank)] >= 0)
      out.emplace_back(p.info.offset, p.info.bytes);
  return out;
}

void HostSession::check_call(const char* what, const WindowRef& ref) const {
  if (ref.call == 0)  // no orchestrator call made it: a default-constructed view or buffer
    throw UsageError(
        fmt::format("{}: the window view is not bound to a comm domain (a default-constructed DistributedTensor "
                    "or WindowBuffer, never allocated); make it with alloc_window_buffer and Host::window<T>() "
                    "(or CommDomain::window<T>()) in this call",
                    what));
  if (ref.call != call_)
    throw UsageError(
        fmt::format("{}: a window buffer or view from another orchestrator call; windows live for one "
                    "call (pld::run / one dispatch of a worker), allocate it again in this one",
                    what));
}

namespace {
// The size check of a view: `shape` x `dtype` within `bytes`, overflow-free.
void check_view_size(const std::string& site, const Dims& shape, DType dtype, std::uint64_t bytes) {
  for (Index e : shape)
    if (e < 0) throw UsageError(fmt::format("{}: shape has a negative extent; extents must be >= 0", site));
  const std::optional<Index> need = try_bytes(shape, dtype_size(dtype));
  if (!need)
    throw UsageError(
        fmt::format("{}: the view's size overflows int64 (shape {} of {}-byte elements); the buffer has "
                    "{} bytes",
                    site, shape.str(), dtype_size(dtype), bytes));
  if (static_cast<std::uint64_t>(*need) > bytes)
    throw UsageError(
        fmt::format("{}: the view needs {} bytes but the buffer has {} bytes; alloc_window_buffer takes "
                    "a size in BYTES (e.g. n * sizeof(T)), not elements",
                    site, *need, bytes));
}
}  // namespace

WindowRef HostSession::view(std::uint32_t domain, const WindowBuffer& buffer, const Dims& shape, DType dtype) const {
  const DomainRecord& d = domains_.at(domain);
  const WindowRef& ref = buffer.ref;
  check_call("window", ref);
  if (ref.domain != domain) {
    const std::string owner = ref.domain < domains_.size() ? domains_[ref.domain].label : std::string("?");
    throw UsageError(
        fmt::format("window: buffer '{}' belongs to comm domain {}, not {}; make the view with the "
                    "domain that allocated it",
                    buffer.name, owner, d.label));
  }
  if (ref.buffer >= d.buffers.size() || d.buffers[ref.buffer].offset != ref.offset ||
      d.buffers[ref.buffer].bytes != ref.bytes)
    throw UsageError(
        fmt::format("window: buffer '{}' was not allocated in this orchestrator call; windows live for "
                    "one call, allocate it again",
                    buffer.name));
  for (Index e : shape)
    if (e < 0)
      throw UsageError(
          fmt::format("window('{}', {}): shape has a negative extent; extents must be >= 0", buffer.name, shape.str()));
  const std::optional<DType> typed = d.typed[ref.buffer];
  if (typed && *typed != dtype)
    throw UsageError(
        fmt::format("window('{}', {}, {}): the buffer was allocated as {} elements; view it as {}, or allocate it by "
                    "bytes (alloc_window_buffer(bytes)) to view its memory as another type",
                    buffer.name, shape.str(), dtype_name(dtype), dtype_name(*typed), dtype_name(*typed)));
  check_view_size(fmt::format("window('{}', {}, {})", buffer.name, shape.str(), dtype_name(dtype)), shape, dtype,
                  ref.bytes);
  return ref;
}

void HostSession::check_view(const char* what, const WindowRef& ref, const Dims& shape, DType dtype) const {
  check_call(what, ref);
  const std::string made = "; make window views with Host::window<T>() or CommDomain::window<T>()";
  if (ref.domain >= domains_.size())
    throw UsageError(fmt::format("{}: a window view of comm domain {}, which this call did not create ({} domains){}",
                                 what, ref.domain, domains_.size(), made));
  const DomainRecord& d = domains_[ref.domain];
  if (ref.buffer >= d.buffers.size() || d.buffers[ref.buffer].offset != ref.offset ||
      d.buffers[ref.buffer].bytes != ref.bytes)
    throw UsageError(
        fmt::format("{}: a window view of buffer {} (offset {}, {} bytes) that comm domain {} does not "
                    "have{}",
                    what, ref.buffer, ref.offset, ref.bytes, d.label, made));
  check_view_size(fmt::format("{}: window view of '{}' with shape {} ({})", what, d.buffers[ref.buffer].name,
                              shape.str(), dtype_name(dtype)),
                  shape, dtype, ref.bytes);
}

void HostSession::record(int rank, Trampoline trampoline, void (*kernel)(), ArgWriter& writer) {
  if (writer.bytes().size() > kMaxArgBytes)
    throw UsageError(
        fmt::format("dispatch to rank {}: the arguments take {} bytes, more than the {} allowed; pass "
                    "large data in a HostTensor",
                    rank, writer.bytes().size(), kMaxArgBytes));
  DispatchRecord rec;
  rec.rank = rank;
  rec.trampoline = trampoline;
  rec.kernel = kernel;
  rec.args = std::move(writer.bytes());
  for (const BlockSpan& span : writer.blocks()) {
    const std::uint32_t b = span.id;
    if (b != 0 && span.bytes > 0) rec.spans.push_back(span);
    if (b == 0 || std::find(rec.blocks.begin(), rec.blocks.end(), b) != rec.blocks.end()) continue;
    BlockRecord br;
    if (!BlockRegistry::instance().find(b, &br))
      throw UsageError(
          fmt::format("dispatch to rank {}: a Tensor argument views a HostTensor that was already "
                      "destroyed; keep the HostTensor alive until pld::run returns",
                      rank));
    if (auto owner = br.owner.lock()) keep_alive_.push_back(std::move(owner));
    rec.blocks.push_back(b);
  }
  for (const auto& a : writer.devices()) {
    if (a->worker != worker_)
      throw UsageError(worker_ == 0
                           ? fmt::format("dispatch to rank {}: a DeviceTensor cannot be passed to pld::run; resident "
                                         "tensors work only with the DistributedWorker that allocated them",
                                         rank)
                           : fmt::format("dispatch to rank {}: the DeviceTensor belongs to another DistributedWorker; "
                                         "resident tensors work only with the worker that allocated them",
                                         rank));
    if (a->rank != rank)
      throw UsageError(
          fmt::format("dispatch to rank {}: the DeviceTensor lives in rank {}'s process "
                      "(worker_id {}); resident tensors never move — dispatch to rank {}, or copy "
                      "the data with copy_from / alloc_tensor",
                      rank, a->rank, a->rank, a->rank));
    keep_alive_.push_back(a);
  }
  for (const WindowArg& w : writer.windows()) {
    check_view("Host::dispatch", w.ref, w.shape, w.dtype);
    const std::uint32_t id = w.ref.domain;
    if (std::find(rec.domains.begin(), rec.domains.end(), id) != rec.domains.end()) continue;
    DomainRecord& d = domains_[id];
    const int local = d.local_of[static_cast<std::size_t>(rank)];
    if (local < 0)
      throw UsageError(
          fmt::format("dispatch to rank {}: an argument is a window of comm domain {}, which rank {} is "
                      "not a member of; dispatch it to a member or allocate it in a domain that "
                      "contains rank {}",
                      rank, d.label, rank, rank));
    d.used = true;
    d.dispatched[static_cast<std::size_t>(local)] = true;
    rec.domains.push_back(id);
  }
  dispatches_.push_back(std::move(rec));
}

void HostSession::reserve_coll_staging() {
  for (DomainRecord& d : domains_) {
    if (!d.used || d.members.size() < 2) continue;
    const std::uint64_t channel = ll_channel_bytes(d.members.size());
    const std::uint64_t channels =
        std::min<std::uint64_t>(d.buffers.size(), std::max<std::uint64_t>(1, kCollStagingBudget / channel));
    const std::uint64_t bytes = channels * channel;
    std::uint64_t top = 0;
    for (int r : d.members) top = std::max(top, heap_top_[static_cast<std::size_t>(r)]);
    if (top + bytes + kWindowAlignment > heap_bytes_) continue;  // no room: LL is off for this domain
    try {
      alloc(d.id, bytes, kCollStagingName);
    } catch (const UsageError&) {  // a persistent heap without room: the same
    }
  }
}

void HostSession::finish() {
  reserve_coll_staging();
  if (layout_) {
    std::lock_guard lock(layout_->mutex_);
    for (const DomainRecord& d : domains_) {
      auto it = layout_->domains_.find(PersistentLayout::Key{program_, d.members, ordinal_of(d)});
      if (it == layout_->domains_.end()) continue;
      if (it->second.sealed)
        for (const auto& [name, info] : it->second.buffers) {
          if (name.rfind("pld.", 0) == 0) continue;
          const bool again = std::any_of(placed_.begin(), placed_.end(),
                                         [&](const Placed& p) { return p.domain == d.id && p.info.name == name; });
          if (!again)
            throw UsageError(
                fmt::format("pld: changed specification — comm domain {} of this persistent worker had "
                            "buffer '{}' ({} bytes) in earlier calls but this call did not allocate it; "
                            "allocate the same buffers in every call (or use a worker without "
                            "WorkerOptions::persistent)",
                            d.label, name, info.bytes));
        }
    }
  }
  for (const DomainRecord& d : domains_) {
    // A domain is described to each rank in one message (members, then buffers with names).
    std::size_t bytes = 16 + 4 * d.members.size();
    for (const BufferInfo& b : d.buffers) bytes += 20 + std::min<std::size_t>(b.name.size(), 200);
    if (bytes > kMaxDomainMessage)
      throw UsageError(
          fmt::format("pld::run: comm domain {} has too many window buffers ({}) to describe to the "
                      "ranks; use fewer, larger buffers",
                      d.label, d.buffers.size()));
    if (!d.used) continue;
    std::vector<int> missing, present;
    for (std::size_t i = 0; i < d.members.size(); ++i) (d.dispatched[i] ? present : missing).push_back(d.members[i]);
    if (!missing.empty())
      throw UsageError(fmt::format(
          "pld::run: rank{} {} received no dispatch using comm domain {} while rank{} {} did; every member of a "
          "domain must take part (peers would wait for it forever): dispatch to every member, e.g. "
          "for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, ...)",
          missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), d.label, present.size() > 1 ? "s" : "",
          fmt::join(present, ", ")));
  }
  if (layout_) {  // the call is well-formed: its buffers are now the domains' specification
    std::lock_guard lock(layout_->mutex_);
    for (const DomainRecord& d : domains_) {
      auto it = layout_->domains_.find(PersistentLayout::Key{program_, d.members, ordinal_of(d)});
      if (it != layout_->domains_.end()) it->second.sealed = true;
    }
  }
}

const WindowBuffer& HostSession::builtin_signal(std::uint32_t domain) {
  if (builtin_signals_.size() < domains_.size()) builtin_signals_.resize(domains_.size());
  auto& sig = builtin_signals_.at(domain);
  if (!sig) {
    const auto rows = static_cast<std::uint64_t>(domains_.at(domain).members.size());
    sig = std::make_unique<WindowBuffer>(alloc(
        domain, rows * static_cast<std::uint64_t>(kBuiltinSignalColumns) * sizeof(std::int32_t), kBuiltinSignalName));
  }
  return *sig;
}

std::string HostSession::describe_buffer(std::uint32_t domain, std::uint32_t buffer) const {
  if (domain >= domains_.size()) return "?";
  const DomainRecord& d = domains_[domain];
  const std::string name = buffer < d.buffers.size() ? d.buffers[buffer].name : std::string("?");
  return fmt::format("'{}' of domain {}", name, d.label);
}

}  // namespace pld::detail
