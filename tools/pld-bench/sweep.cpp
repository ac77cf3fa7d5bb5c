#include "sweep.hpp"

#include "rules.hpp"

#include <algorithm>

namespace pldbench {

namespace {

constexpr std::uint64_t kPage = 4096;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}

std::vector<std::uint64_t> sizes(const Options& o) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = o.min_bytes; s <= o.max_bytes;) {
    out.push_back(s);
    const std::uint64_t next = o.step_bytes ? s + o.step_bytes : (s ? s * o.step_factor : 1);
    if (next <= s) break;
    s = next;
  }
  return out;
}

Iters iters_for(const Options& o, std::uint64_t bytes, std::int64_t cap, std::int64_t min_warmup, bool first_row) {
  Iters it;
  it.iters = o.iters > 0 ? o.iters : std::min(rules::auto_iters(o.budget_bytes, bytes, o.min_iters, o.max_iters), cap);
  it.warmup = rules::warmup_iters(o.warmup, it.iters, min_warmup, first_row);
  return it;
}

}  // namespace

double busbw_factor(Coll c, int n) {
  const double p = n;
  switch (c) {
    case Coll::Allreduce: return 2.0 * (p - 1) / p;
    case Coll::ReduceScatter:
    case Coll::Allgather:
    case Coll::AllToAll:
    case Coll::AllToAllV: return (p - 1) / p;
    case Coll::Broadcast:
    case Coll::P2P:
    case Coll::PutSignal:
    case Coll::Nbi: return 1.0;
    case Coll::Barrier: return 0.0;
  }
  return 0.0;
}

bool reduces(Coll c) {
  return c == Coll::Allreduce || c == Coll::ReduceScatter;
}

bool row_blocked(Coll c) {
  return c == Coll::Allgather || c == Coll::ReduceScatter || c == Coll::AllToAll || c == Coll::AllToAllV;
}

Plan make_plan(const Options& o) {
  Plan plan;
  const auto all_sizes = sizes(o);
  const int n = o.nranks;
  auto add_row = [&](Table& t, Point p) {
    p.index = plan.npoints++;
    const bool builtin_cap = !one_sided(p.coll);
    const bool first = p.index == 0;  // the first row of the process (rules.hpp)
    p.composite = iters_for(o, p.bytes, o.max_iters, 5, first);
    p.builtin = builtin_cap ? iters_for(o, p.bytes, std::min(o.max_iters, o.max_builtin_iters), 2, first) : Iters{};
    std::uint64_t data = p.bytes, aux = 0;
    if (p.coll == Coll::Allgather) aux = p.bytes / static_cast<std::uint64_t>(n);
    if (p.coll == Coll::AllToAll || p.coll == Coll::AllToAllV || one_sided(p.coll)) aux = p.bytes;
    plan.data_bytes = std::max(plan.data_bytes, data);
    plan.aux_bytes = std::max(plan.aux_bytes, aux);
    t.rows.push_back(p);
  };
  for (Coll c : o.colls) {
    const std::vector<pld::AllreduceMode> modes =
        c == Coll::Allreduce ? o.modes : std::vector<pld::AllreduceMode>{pld::AllreduceMode::Auto};
    for (pld::AllreduceMode mode : modes) {
      Table t;
      t.coll = c;
      t.mode = mode;
      if (c == Coll::Barrier) {
        Point p;
        p.coll = c;
        add_row(t, p);
        plan.tables.push_back(std::move(t));
        continue;
      }
      const std::vector<pld::DType> dtypes = one_sided(c) ? std::vector<pld::DType>{pld::DType::UINT8} : o.dtypes;
      const std::vector<pld::ReduceOp> redops = reduces(c) ? o.redops : std::vector<pld::ReduceOp>{pld::ReduceOp::Sum};
      std::vector<std::uint64_t> done(dtypes.size(), ~0ull);  // last size per dtype, to drop duplicates
      for (std::uint64_t size : all_sizes) {
        for (std::size_t d = 0; d < dtypes.size(); ++d) {
          const std::uint64_t esz = pld::dtype_size(dtypes[d]);
          const std::uint64_t unit = row_blocked(c)   ? esz * static_cast<std::uint64_t>(n)
                                     : c == Coll::Nbi ? esz * kNbiChunks
                                                      : esz;
          const std::uint64_t bytes = std::max(unit, size / unit * unit);
          if (bytes == done[d]) continue;
          done[d] = bytes;
          for (pld::ReduceOp op : redops) {
            Point p;
            p.coll = c;
            p.dtype = dtypes[d];
            p.redop = op;
            p.mode = mode;
            p.root = c == Coll::Broadcast ? o.root : -1;
            p.bytes = bytes;
            p.count = static_cast<pld::Index>(bytes / esz);
            p.cols = row_blocked(c) ? p.count / n : p.count;
            add_row(t, p);
          }
        }
      }
      plan.tables.push_back(std::move(t));
    }
  }
  // Page-aligned operands, then signals and counts.
  plan.heap_bytes = round_up(std::max<std::uint64_t>(plan.data_bytes, 1), kPage) +
                    round_up(std::max<std::uint64_t>(plan.aux_bytes, 1), kPage) + (1ull << 20);
  return plan;
}

}  // namespace pldbench
