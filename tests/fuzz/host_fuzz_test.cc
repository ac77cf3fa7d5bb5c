// Randomized arguments for the host calls: alloc_window_buffer (bytes and shape forms, world and a
// sub-domain), window<T>, Host::domain, Host::dispatch's argument checks (rank, membership,
// unshared tensors, hand-made window views) and HostTensor shapes. Many calls run inside one
// orchestrator; the model tracks every rank's heap top, so it knows which allocations fit and
// where they land. Seeds and case counts: fuzz/fuzz.hpp.
#include "fuzz/model.hpp"

#include <algorithm>
#include <optional>

namespace pld::fuzz {
namespace {

enum HostOp : int { kAllocBytes = 60, kAllocShape, kWindow, kDomain, kDispatch, kHostTensor, kHostEnd };
constexpr const char* kHostNames[] = {"alloc_window_buffer", "alloc_window_buffer", "window", "domain", "dispatch",
                                      "HostTensor"};
const char* host_name(int op) {
  return kHostNames[op - kAllocBytes];
}
constexpr std::uint64_t kHeap = 64ull << 20;  // test::ranks' heap_bytes
constexpr std::uint64_t kAlign = 64;          // window buffers start at multiples of 64 bytes
constexpr std::int64_t kHostChunk = 250;      // cases per pld::run (a fresh heap)

/// The orchestrator's state: domains, the model's heap tops and the buffers allocated so far.
struct HostState {
  Host* h = nullptr;
  int p = 0;
  std::vector<CommDomain> domains;                    // [0] world, [1] a sub-domain (P > 1)
  std::vector<std::uint64_t> top;                     // per world rank
  std::vector<std::pair<int, WindowBuffer>> buffers;  // (domain index, buffer)
  std::vector<std::vector<std::string>> names;        // per domain
  std::vector<WindowBuffer> fixed;                    // per domain: a 64-byte buffer
  HostTensor<float> shared = HostTensor<float>::zeros({4});
};

std::uint64_t draw_bytes(Rng& r, std::uint64_t room) {
  const std::uint64_t values[] = {0,         1,          3,          63,         64,         65,
                                  100,       4096,       room,       room + 1,   room - 1,   kHeap,
                                  kHeap + 1, 1ull << 31, 1ull << 32, 1ull << 62, UINT64_MAX, UINT64_MAX - 63,
                                  1ull << 20};
  return r.chance(50) ? static_cast<std::uint64_t>(r.range(0, 5000)) : r.pick(values);
}

std::string draw_name(Rng& r, const std::vector<std::string>& taken, std::int64_t i) {
  const int k = static_cast<int>(r.below(20));
  if (k < 4) return "";
  if (k == 4 && !taken.empty())
    return taken[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(taken.size())))];
  if (k == 5) return "pld.mine";
  return "b" + std::to_string(i);
}

/// A shape with boundary extents (sometimes negative, sometimes huge).
Dims draw_host_shape(Rng& r) {
  Dims s;
  const int n = static_cast<int>(r.range(0, 4));
  for (int d = 0; d < n; ++d) s.push_back(r.chance(85) ? r.range(0, 9) : boundary_index(r, 4));
  return s;
}

Wide exact_bytes(const Dims& s, std::size_t esz) {
  const Wide n = numel_exact(s);
  return n < 0 ? -1 : n * static_cast<Wide>(esz);
}

std::string check_alloc(HostState& st, int dom, const std::optional<WindowBuffer>& b, Wide bytes,
                        const std::string& name) {
  const auto& members = st.domains[static_cast<std::size_t>(dom)].ranks();
  std::uint64_t at = 0;
  for (int r : members) at = std::max(at, st.top[static_cast<std::size_t>(r)]);
  at = (at + kAlign - 1) / kAlign * kAlign;
  if (!b) return {};
  if (static_cast<Wide>(b->bytes()) != bytes) return "buffer has " + std::to_string(b->bytes()) + " bytes";
  if (b->ref.offset != at)
    return "buffer at offset " + std::to_string(b->ref.offset) + ", expected " + std::to_string(at);
  for (int r : members) st.top[static_cast<std::size_t>(r)] = at + b->bytes();
  st.buffers.emplace_back(dom, *b);
  st.names[static_cast<std::size_t>(dom)].push_back(b->name);
  return name.empty() || b->name == name ? std::string() : "buffer named '" + b->name + "', expected '" + name + "'";
}

// alloc_window_buffer(bytes) and alloc_window_buffer(shape, dtype).
std::string alloc_case(HostState& st, Rng& r, std::int64_t i, bool shape_form, bool& threw) {
  const int dom = st.p > 1 && r.chance(30) ? 1 : 0;
  CommDomain& d = st.domains[static_cast<std::size_t>(dom)];
  std::uint64_t at = 0;
  for (int rank : d.ranks()) at = std::max(at, st.top[static_cast<std::size_t>(rank)]);
  at = (at + kAlign - 1) / kAlign * kAlign;
  const std::uint64_t room = at <= kHeap ? kHeap - at : 0;
  const std::string name = draw_name(r, st.names[static_cast<std::size_t>(dom)], i);
  const Dims shape = draw_host_shape(r);
  const DType dtype = draw_dtype(r);
  const Wide bytes = shape_form ? (shape.empty() || !shape_ok(shape) ? -1 : exact_bytes(shape, dtype_size(dtype)))
                                : static_cast<Wide>(draw_bytes(r, room));
  const auto& taken = st.names[static_cast<std::size_t>(dom)];
  const bool name_ok = name.rfind("pld.", 0) != 0 && std::find(taken.begin(), taken.end(), name) == taken.end();
  const bool valid = name_ok && bytes >= 0 && bytes <= static_cast<Wide>(room);
  std::optional<WindowBuffer> b;
  const Attempt a = attempt([&] {
    b = shape_form ? d.alloc_window_buffer(shape, dtype, name)
                   : d.alloc_window_buffer(static_cast<std::uint64_t>(bytes), name);
  });
  threw = a.threw;
  std::string problem = judge(a, valid, "alloc_window_buffer");
  if (problem.empty() && !a.threw) problem = check_alloc(st, dom, b, bytes, name);
  if (!problem.empty())
    problem += " (domain " + std::to_string(dom) + ", bytes " + std::to_string(static_cast<long double>(bytes)) +
               ", shape " + shape.str() + " " + dtype_name(dtype) + ", name '" + name + "')";
  return problem;
}

std::string window_case(HostState& st, Rng& r, bool& threw) {
  if (st.buffers.empty()) return {};
  const auto& [owner, buf] =
      st.buffers[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(st.buffers.size())))];
  const int dom = st.p > 1 && r.chance(30) ? 1 : 0;
  const Dims shape = r.chance(70) ? draw_shape(r, 4, buf.bytes()) : draw_host_shape(r);
  const Wide need = exact_bytes(shape, 4);
  const bool valid = owner == dom && shape_ok(shape) && need >= 0 && need <= static_cast<Wide>(buf.bytes());
  DistributedTensor<float> v;
  const Attempt a =
      attempt([&] { v = dom == 0 ? st.h->window<float>(buf, shape) : st.domains[1].window<float>(buf, shape); });
  threw = a.threw;
  std::string problem = judge(a, valid, "window");
  if (problem.empty() && !a.threw && !(v.shape() == shape && v.ref().offset == buf.ref.offset))
    problem = "the view has shape " + v.shape().str() + " at offset " + std::to_string(v.ref().offset);
  return problem.empty()
             ? problem
             : problem + " (buffer of " + std::to_string(buf.bytes()) + " bytes in domain " + std::to_string(owner) +
                   ", view in domain " + std::to_string(dom) + ", shape " + shape.str() + ")";
}

std::string domain_case(HostState& st, Rng& r, bool& threw) {
  std::vector<int> ranks;
  const int len = static_cast<int>(r.range(0, st.p + 1));
  const int odd[] = {-1, st.p, INT32_MIN, INT32_MAX};
  for (int k = 0; k < len; ++k) ranks.push_back(r.chance(90) ? static_cast<int>(r.below(st.p)) : r.pick(odd));
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  bool valid = !sorted.empty() && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  for (int x : sorted) valid = valid && x >= 0 && x < st.p;
  std::optional<CommDomain> d;
  const Attempt a = attempt([&] { d = st.h->domain(ranks); });
  threw = a.threw;
  std::string problem = judge(a, valid, "domain");
  if (problem.empty() && d && !(d->ranks() == sorted && d->size() == static_cast<int>(sorted.size())))
    problem = "the domain's ranks are not the sorted list";
  return problem;
}

void noop(DistributedTensor<float>, Tensor<float>, int) {}

std::string dispatch_case(HostState& st, Rng& r, bool& threw) {
  const int odd[] = {-1, st.p, INT32_MIN, INT32_MAX};
  const int rank = r.chance(85) ? static_cast<int>(r.below(st.p)) : r.pick(odd);
  const int dom = st.p > 1 && r.chance(40) ? 1 : 0;
  const auto& members = st.domains[static_cast<std::size_t>(dom)].ranks();
  DistributedTensor<float> view =
      st.domains[static_cast<std::size_t>(dom)].window<float>(st.fixed[static_cast<std::size_t>(dom)], {1});
  bool view_ok = true;
  if (r.chance(10)) {  // a view made by hand, not by window<T>
    detail::WindowRef ref = view.ref();
    const int how = static_cast<int>(r.below(4));
    if (how == 0) ref.domain = 1000;
    if (how == 1) ref.buffer = 1000;
    if (how == 2) ref.offset = 1ull << 40;
    view = detail::Access::make<DistributedTensor<float>>(ref, how == 3 ? Dims{1 << 26} : view.shape());
    view_ok = false;
  }
  float stack[4] = {};
  const bool unshared = r.chance(10);
  const Tensor<float> t = unshared ? Tensor<float>(stack, {4}) : st.shared.view();
  const bool member = std::find(members.begin(), members.end(), rank) != members.end();
  const bool valid = rank >= 0 && rank < st.p && member && view_ok && !unshared;
  const Attempt a = attempt([&] { st.h->dispatch(rank, noop, view, t, 7); });
  threw = a.threw;
  const std::string problem = judge(a, valid, "dispatch");
  return problem.empty() ? problem
                         : problem + " (rank " + std::to_string(rank) + ", domain " + std::to_string(dom) +
                               (view_ok ? "" : ", a hand-made view") + (unshared ? ", an unshared tensor" : "") + ")";
}

/// Buffers the window and dispatch cases use: a few sizes in every domain.
void prepare(HostState& st) {
  for (int dom = 0; dom < static_cast<int>(st.domains.size()); ++dom)
    for (std::uint64_t bytes : {64, 0, 1, 16, 100, 4096}) {
      const auto b =
          st.domains[static_cast<std::size_t>(dom)].alloc_window_buffer(bytes, "fixed" + std::to_string(bytes));
      check_alloc(st, dom, b, bytes, b.name);
      if (bytes == 64) st.fixed.push_back(b);
    }
}

/// Every member of every domain gets a dispatch (pld requires it of a domain whose windows are used).
void finish(HostState& st) {
  for (int dom = 0; dom < static_cast<int>(st.domains.size()); ++dom) {
    const auto view =
        st.domains[static_cast<std::size_t>(dom)].window<float>(st.fixed[static_cast<std::size_t>(dom)], {1});
    for (int r : st.domains[static_cast<std::size_t>(dom)].ranks()) st.h->dispatch(r, noop, view, st.shared.view(), 0);
  }
}

std::string host_tensor_case(Rng& r, bool& threw) {
  Dims shape = draw_host_shape(r);
  const Wide bytes = exact_bytes(shape, 4);
  if (bytes > (Wide{1} << 20) && bytes < (Wide{1} << 48)) shape = Dims{3, 5};  // never allocate gigabytes
  const Wide n = numel_exact(shape);
  const bool valid = shape_ok(shape) && n >= 0 && n * 4 <= (Wide{1} << 20);
  std::optional<HostTensor<float>> t;
  const Attempt a = attempt([&] { t.emplace(shape); });
  threw = a.threw;
  std::string problem = judge(a, valid, "HostTensor");
  if (!problem.empty() || a.threw) return problem.empty() ? problem : problem + " (shape " + shape.str() + ")";
  if (t->numel() != static_cast<Index>(n) || !(t->shape() == shape))
    return "numel " + std::to_string(t->numel()) + " for shape " + shape.str();
  if (n == 0) return {};
  Dims at;
  for (Index e : shape) at.push_back(r.range(0, e - 1));
  t->at(at) = 5.f;
  const float first = t->data()[0], last = t->data()[static_cast<Index>(n) - 1];
  if (t->data()[linear_of(shape, at)] != 5.f || (first != 0.f && first != 5.f) || (last != 0.f && last != 5.f))
    return "at() wrote the wrong element, or the tensor was not zero-filled (shape " + shape.str() + ")";
  return {};
}

void host_chunk(int op, int p, std::int64_t from, std::int64_t to, const Logs& logs) {
  auto body = [&](HostState& st) {
    for (std::int64_t i = from; i < to; ++i) {
      Rng r = case_rng(settings().seed, op, p, i);
      bool threw = false;
      std::string problem;
      switch (op) {
        case kAllocBytes: problem = alloc_case(st, r, i, false, threw); break;
        case kAllocShape: problem = alloc_case(st, r, i, true, threw); break;
        case kWindow: problem = window_case(st, r, threw); break;
        case kDomain: problem = domain_case(st, r, threw); break;
        case kDispatch: problem = dispatch_case(st, r, threw); break;
        default: problem = host_tensor_case(r, threw);
      }
      logs.counters(0, kCases) += 1;
      logs.counters(0, kErrors) += threw ? 1 : 0;
      if (problem.empty()) continue;
      logs.counters(0, kFailures) += 1;
      ADD_FAILURE() << case_tag(host_name(op), p, i) << ": " << problem;
    }
  };
  if (op == kHostTensor) {
    HostState st;
    return body(st);
  }
  run(test::ranks(p), [&](Host& h) {
    HostState st;
    st.h = &h;
    st.p = p;
    st.top.assign(static_cast<std::size_t>(p), 0);
    st.domains.push_back(h.world());
    if (p > 1) st.domains.push_back(h.domain({p - 1, 0}));
    st.names.resize(st.domains.size());
    prepare(st);
    body(st);
    finish(st);
  });
}

class HostFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(HostFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  run_cases(
      host_name(op), p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) {
        for (std::int64_t from = start; from < end; from += kHostChunk)
          host_chunk(op, p, from, std::min(end, from + kHostChunk), logs);
      },
      [](std::int64_t) { return std::string("(host call)"); });
}

INSTANTIATE_TEST_SUITE_P(Calls, HostFuzz,
                         ::testing::Combine(::testing::Range(int{kAllocBytes}, int{kHostEnd}),
                                            ::testing::Range(1, kMaxP + 1)),
                         [](const auto& info) {
                           const int op = std::get<0>(info.param);
                           const std::string name = op == kAllocShape   ? "alloc_shape"
                                                    : op == kAllocBytes ? "alloc_bytes"
                                                                        : host_name(op);
                           return name + "_P" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace pld::fuzz
