// The hang analysis of the process groups: expected writers, wait-for graph, verdicts, DOT output.
#include "group/hang_report.h"

#include "backend/backend.h"
#include "backend/wait_cmp.h"
#include "core/settings.h"
#include "host/session.h"

#include <pld/detail/atomic.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

namespace pld::detail {

namespace {

const char* state_text(RankSnapshot::State s) {
  switch (s) {
    case RankSnapshot::State::NotRunning: return "not running (its process has ended)";
    case RankSnapshot::State::Idle: return "idle (no dispatch in progress)";
    case RankSnapshot::State::Running: return "running a kernel (not in a wait)";
    case RankSnapshot::State::Waiting: return "waiting";
  }
  return "?";
}

std::string join_ranks(const std::vector<int>& rs) {
  std::string out;
  for (std::size_t i = 0; i < rs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == rs.size() ? " and " : ", ") + std::to_string(rs[i]);
  return out;
}

// One expected writer of an awaited cell, and why pld thinks so.
struct Writer {
  int rank;
  std::string why;
  bool wrote = false;  // it did notify this cell (history)
  bool set = false;    // ... with NotifyOp::Set
  std::int32_t last_value = 0;
  int elsewhere = -1;  // it notified the same cell of this other rank instead
};

std::vector<Writer> cell_writers(int a, const RankSnapshot& w, const std::vector<RankSnapshot>& ranks,
                                 const HostSession& session) {
  std::vector<Writer> out;
  if (in_engine_collective(w)) {  // the members not in a collective themselves
    if (w.domain >= session.domains().size()) return out;
    const DomainRecord& d = session.domain(w.domain);
    for (int m : d.members)
      if (m != a && m < static_cast<int>(ranks.size()) &&
          ranks[static_cast<std::size_t>(m)].state != RankSnapshot::State::Waiting)
        out.push_back({m, fmt::format("a member of comm domain {} that has not entered the collective", d.label)});
    return out;
  }
  if (w.writer >= 0) {
    out.push_back({w.writer, fmt::format("the {} protocol: that rank is the only one that raises this cell",
                                         w.what.empty() ? "collective" : w.what)});
    return out;
  }
  // Direct evidence: notifies in the histories that targeted this very cell.
  for (int x = 0; x < static_cast<int>(ranks.size()); ++x) {
    const OpRecord* last = nullptr;
    bool any_set = false;
    for (const OpRecord& r : ranks[static_cast<std::size_t>(x)].history)
      if ((notifies(r.kind) || (r.kind == OpKind::Atomic && r.flag != static_cast<std::uint8_t>(AmoOp::Fetch))) &&
          r.peer == a && r.offset == w.offset) {
        last = &r;
        any_set |= r.kind == OpKind::Atomic ? r.flag != static_cast<std::uint8_t>(AmoOp::Add)
                                            : r.flag == static_cast<std::uint8_t>(NotifyOp::Set);
      }
    if (last && last->kind == OpKind::Atomic)
      out.push_back({x,
                     fmt::format("changed it: atomic_{} {} (its operation #{})",
                                 amo_name(static_cast<AmoOp>(last->flag)), last->value, last->seq),
                     true, any_set, last->value});
    else if (last)
      out.push_back({x,
                     fmt::format("notified it: {} {} (its operation #{})",
                                 last->flag == static_cast<std::uint8_t>(NotifyOp::Set) ? "Set" : "AtomicAdd",
                                 last->value, last->seq),
                     true, any_set, last->value});
  }
  if (!out.empty()) return out;
  // Symmetric evidence: ranks that notified the same cell of other ranks, but not of this one.
  for (int x = 0; x < static_cast<int>(ranks.size()); ++x)
    for (const OpRecord& r : ranks[static_cast<std::size_t>(x)].history)
      if (notifies(r.kind) && r.peer != a && r.offset == w.offset && x != a) {
        Writer wr{x, fmt::format("notified the same cell on rank {} but not on this one", r.peer)};
        wr.elsewhere = r.peer;
        out.push_back(wr);
        break;
      }
  if (!out.empty()) return out;
  // The one-writer-per-row convention (offsets = {source, ...}): row s is written by rank s,
  // unless the histories show a rank writing another rank's row of this signal.
  if (w.domain < session.domains().size() && w.offsets.size() >= 1) {
    const DomainRecord& d = session.domain(w.domain);
    const Index row = w.offsets[0];
    bool convention = row >= 0 && row < static_cast<Index>(d.members.size());
    for (int x = 0; x < static_cast<int>(ranks.size()) && convention; ++x)
      for (const OpRecord& r : ranks[static_cast<std::size_t>(x)].history)
        if (notifies(r.kind) && r.domain == w.domain && r.buffer == w.buffer && r.ndim >= 1 &&
            static_cast<std::size_t>(x) < d.local_of.size() && r.coords[0] != d.local_of[static_cast<std::size_t>(x)])
          convention = false;
    if (convention) {
      const int s = d.members[static_cast<std::size_t>(row)];
      if (s != a)
        out.push_back({s, fmt::format("presumed: row {} of the signal belongs to rank {} (one writer per row); no "
                                      "rank notified this cell in its last {} operations",
                                      row, s, kOpHistory)});
    }
  }
  return out;
}

// The expected writers of rank a's wait: of its cell, or of each of its cells not yet satisfied
// (a multi-cell wait; each writer once, its reason naming the cell).
std::vector<Writer> expected_writers(int a, const std::vector<RankSnapshot>& ranks, const HostSession& session) {
  const RankSnapshot& w = ranks[static_cast<std::size_t>(a)];
  if (w.cells.empty()) return cell_writers(a, w, ranks, session);
  std::vector<Writer> out;
  for (const RankSnapshot::Cell& c : w.cells) {
    if (wait_cmp_holds(c.value, c.expected, w.cmp)) continue;
    RankSnapshot one = w;
    one.offsets = c.offsets;
    one.offset = c.offset;
    for (Writer& x : cell_writers(a, one, ranks, session)) {
      if (std::any_of(out.begin(), out.end(), [&](const Writer& y) { return y.rank == x.rank; })) continue;
      x.why = fmt::format("cell {}: {}", c.offsets.str(), x.why);
      out.push_back(std::move(x));
    }
  }
  return out;
}

// "'sig' [0, 1]", or for a multi-cell wait "'sig' [0, 1] | [0, 2] (2 cells)".
std::string cell_text(const RankSnapshot& s, const HostSession& session) {
  std::string t = buffer_name(session, s.domain, s.buffer) + " " + s.offsets.str();
  if (s.cells.empty()) return t;
  for (std::size_t i = 1; i < s.cells.size(); ++i) t += " | " + s.cells[i].offsets.str();
  return t + fmt::format(" ({} cells)", s.cell_count);
}

// The first cycle reachable in the wait-for graph, as a list of ranks (a -> b -> ... -> a).
std::vector<int> find_cycle(const std::vector<std::vector<int>>& edges) {
  const int n = static_cast<int>(edges.size());
  std::vector<int> color(static_cast<std::size_t>(n), 0), parent(static_cast<std::size_t>(n), -1);
  std::vector<int> cycle;
  std::function<bool(int)> dfs = [&](int u) {
    color[static_cast<std::size_t>(u)] = 1;
    for (int v : edges[static_cast<std::size_t>(u)]) {
      if (color[static_cast<std::size_t>(v)] == 1) {
        for (int x = u; x != v; x = parent[static_cast<std::size_t>(x)]) cycle.push_back(x);
        cycle.push_back(v);
        std::reverse(cycle.begin(), cycle.end());
        return true;
      }
      if (color[static_cast<std::size_t>(v)] == 0) {
        parent[static_cast<std::size_t>(v)] = u;
        if (dfs(v)) return true;
      }
    }
    color[static_cast<std::size_t>(u)] = 2;
    return false;
  };
  for (int u = 0; u < n; ++u)
    if (color[static_cast<std::size_t>(u)] == 0 && dfs(u)) return cycle;
  return {};
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The wait-for graph of one snapshot: rank a -> rank b when a waits on a cell b is expected to write.
struct WaitGraph {
  std::vector<std::vector<int>> edges;
  std::vector<std::vector<Writer>> writers;  // per waiting rank: the expected writers of its cell
  std::vector<std::string> cell;             // per waiting rank: "'sig' [0, 1]"
  std::vector<int> cycle;                    // the first cycle found, or empty
  std::set<std::pair<int, int>> cycle_edges;
  std::map<int, std::vector<int>> sinks;  // waited-for ranks that do not wait themselves -> their waiters
};

// One line per rank (state or wait, expected writers, last operations); fills the graph's edges.
std::string describe_ranks(const std::vector<RankSnapshot>& ranks, const HostSession& session, WaitGraph& g) {
  const int n = static_cast<int>(ranks.size());
  std::string t;
  for (int r = 0; r < n; ++r) {
    const RankSnapshot& s = ranks[static_cast<std::size_t>(r)];
    t += "\n  " + s.who + ": ";
    if (s.state != RankSnapshot::State::Waiting) {
      t += state_text(s.state);
    } else {
      g.cell[static_cast<std::size_t>(r)] =
          in_engine_collective(s) ? fmt::format("MPI's {} on {}", s.what, buffer_name(session, s.domain, s.buffer))
                                  : cell_text(s, session);
      t += describe_wait(s, session);
      auto& ws = g.writers[static_cast<std::size_t>(r)];
      ws = expected_writers(r, ranks, session);
      if (ws.empty() && in_engine_collective(s)) {
        t += "\n      expected: every other member is in a collective too (different collectives, or a different "
             "order?)";
      } else if (ws.empty()) {
        t += fmt::format("\n      expected writer: unknown — no rank notified this cell in its last {} operations",
                         kOpHistory);
      }
      for (const Writer& w : ws) {
        t += fmt::format("\n      expected writer: rank {} — {}; it is {}", w.rank, w.why,
                         state_text(ranks[static_cast<std::size_t>(w.rank)].state));
        if (w.rank != r) g.edges[static_cast<std::size_t>(r)].push_back(w.rank);
      }
    }
    t += describe_history(s, session);
  }
  return t;
}

// A cycle in the graph (a deadlock, or notifies that went elsewhere) and every misdirected notify.
// Only the edges to writers that have not notified the cell yet can be a deadlock: a rank whose
// writers all did is waiting for a value they have not produced (value_verdict), not for them.
std::string cycle_verdict(WaitGraph& g) {
  std::string verdict;
  std::vector<std::vector<int>> blocking(g.edges.size());
  for (std::size_t a = 0; a < g.edges.size(); ++a)
    for (const Writer& w : g.writers[a])
      if (!w.wrote && w.rank != static_cast<int>(a)) blocking[a].push_back(w.rank);
  g.cycle = find_cycle(blocking);
  auto misdirected = [&](int a, int b) {
    for (const Writer& w : g.writers[static_cast<std::size_t>(a)])
      if (w.rank == b && w.elsewhere >= 0) return true;
    return false;
  };
  if (!g.cycle.empty()) {
    bool any_misdirected = false;
    std::string chain;
    for (std::size_t i = 0; i < g.cycle.size(); ++i) {
      const int a = g.cycle[i], b = g.cycle[(i + 1) % g.cycle.size()];
      g.cycle_edges.insert({a, b});
      any_misdirected |= misdirected(a, b);
      chain += fmt::format("{}rank {} waits for rank {} (cell {})", i ? ", " : "", a, b,
                           g.cell[static_cast<std::size_t>(a)]);
    }
    if (any_misdirected)
      verdict += "\nWait cycle: " + chain + " — the notifies these ranks wait for went to other ranks (below).";
    else
      verdict += "\nDeadlock: " + chain +
                 " — a cycle: each of these ranks waits before it notifies the next; notify "
                 "before you wait.";
  }
  for (std::size_t a = 0; a < g.writers.size(); ++a)
    for (const Writer& w : g.writers[a])
      if (w.elsewhere >= 0)
        verdict += fmt::format(
            "\nMisdirected notify: rank {} notified {} on rank {}, but rank {} waits for it on its "
            "own copy — check the notify's peer and the wait's offsets (an off-by-one?).",
            w.rank, g.cell[a], w.elsewhere, a);
  return verdict;
}

// Waited-for ranks that are not waiting themselves: they never notified (or not enough).
std::string sink_verdict(const std::vector<RankSnapshot>& ranks, WaitGraph& g) {
  std::string verdict;
  for (std::size_t a = 0; a < g.edges.size(); ++a)
    for (int b : g.edges[a])
      if (ranks[static_cast<std::size_t>(b)].state != RankSnapshot::State::Waiting)
        g.sinks[b].push_back(static_cast<int>(a));
  for (const auto& [b, waiters] : g.sinks) {
    bool wrote = false;
    for (int a : waiters)
      for (const Writer& w : g.writers[static_cast<std::size_t>(a)])
        if (w.rank == b) wrote |= w.wrote;
    const auto& bs = ranks[static_cast<std::size_t>(b)];
    const bool engine = std::all_of(waiters.begin(), waiters.end(),
                                    [&](int a) { return in_engine_collective(ranks[static_cast<std::size_t>(a)]); });
    if (engine) {
      verdict += fmt::format(
          "\nRank {} never entered the collective: rank{} {} wait{} for it in MPI's own {}, and it "
          "is {}.",
          b, waiters.size() > 1 ? "s" : "", join_ranks(waiters), waiters.size() > 1 ? "" : "s",
          ranks[static_cast<std::size_t>(waiters[0])].what, state_text(bs.state));
      if (bs.state == RankSnapshot::State::Idle)
        verdict += " It finished its dispatches without calling it: look for a rank-dependent branch.";
    } else if (!wrote) {
      verdict += fmt::format("\nRank {} never notified: rank{} {} wait{} for it, and it is {}.", b,
                             waiters.size() > 1 ? "s" : "", join_ranks(waiters), waiters.size() > 1 ? "" : "s",
                             state_text(bs.state));
      if (bs.state == RankSnapshot::State::Idle)
        verdict +=
            " It finished its dispatches without the notify: look for a rank-dependent branch, loop bound or "
            "peer index that skips it.";
      else if (bs.state == RankSnapshot::State::Running)
        verdict += " It is still computing, or looping before its notify.";
    } else {
      verdict += fmt::format("\nRank {} notified, but not enough: rank{} {} still wait{} for it, and it is {}.", b,
                             waiters.size() > 1 ? "s" : "", join_ranks(waiters), waiters.size() > 1 ? "" : "s",
                             state_text(bs.state));
    }
  }
  return verdict;
}

// Waiting ranks whose every expected writer already notified their cell, and is waiting itself
// (or done): the value the wait needs is not coming from them.
std::string value_verdict(const std::vector<RankSnapshot>& ranks, const WaitGraph& g) {
  std::string verdict;
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    const auto& s = ranks[a];
    const auto& ws = g.writers[a];
    if (s.state != RankSnapshot::State::Waiting || ws.empty() || in_engine_collective(s)) continue;
    if (!std::all_of(ws.begin(), ws.end(), [](const Writer& w) { return w.wrote && w.elsewhere < 0; })) continue;
    if (!std::all_of(ws.begin(), ws.end(), [&](const Writer& w) {
          return ranks[static_cast<std::size_t>(w.rank)].state == RankSnapshot::State::Waiting;
        }))
      continue;  // a writer still running or done: sink_verdict says "notified, but not enough"
    std::vector<int> who;
    for (const Writer& w : ws) who.push_back(w.rank);
    verdict += fmt::format(
        "\nValue never reached on rank {}: cell {} holds {}, waits {} {}; every writer has notified it (rank{} {}) "
        "and waits itself now, so no further notify is coming. Check the expected value and the number of "
        "notifies (a writer that notifies again only after its own wait would be a deadlock: notify before you "
        "wait).",
        a, g.cell[a], s.value, wait_cmp_symbol(s.cmp), s.expected, who.size() > 1 ? "s" : "", join_ranks(who));
  }
  return verdict;
}

// Lost updates, overshoots and cells without a known writer, per waiting rank.
std::string cell_verdict(const std::vector<RankSnapshot>& ranks, const WaitGraph& g) {
  std::string verdict;
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    const auto& s = ranks[a];
    if (s.state != RankSnapshot::State::Waiting) continue;
    std::vector<int> setters;
    for (const Writer& w : g.writers[a])
      if (w.set) setters.push_back(w.rank);
    if (setters.size() >= 2)
      verdict += fmt::format(
          "\nLost update on rank {}: ranks {} all Set cell {}, so each Set overwrote the one before "
          "and the cell holds {} instead of a count; count with NotifyOp::AtomicAdd and wait with "
          "WaitCmp::Ge (or give each writer its own cell).",
          a, join_ranks(setters), g.cell[a], s.value);
    if (s.cmp == WaitCmp::Eq && s.value > s.expected)
      verdict += fmt::format(
          "\nRank {} waits for == {} on {} but the cell already holds {}: a fast peer advanced "
          "past it; counters take WaitCmp::Ge.",
          a, s.expected, g.cell[a], s.value);
    if (g.writers[a].empty() && !in_engine_collective(s))
      verdict += fmt::format(
          "\nNo rank is known to write {} that rank {} waits on: check the peer and offsets of "
          "the notify meant for it.",
          g.cell[a], a);
  }
  return verdict;
}

// The graph in Graphviz DOT: waiting ranks yellow, never-notifying ranks orange, the cycle red.
std::string wait_for_dot(const std::vector<RankSnapshot>& ranks, const WaitGraph& g) {
  std::string d = "digraph pld_wait_for {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto& s = ranks[r];
    std::string label = s.who + "\\n";
    if (s.state == RankSnapshot::State::Waiting)
      label +=
          dot_escape(fmt::format("waits {} {} {} (holds {})", g.cell[r], wait_cmp_symbol(s.cmp), s.expected, s.value));
    else
      label += state_text(s.state);
    std::string style;
    if (g.sinks.count(static_cast<int>(r)))
      style = ", style=filled, fillcolor=orange";
    else if (s.state == RankSnapshot::State::Waiting)
      style = ", style=filled, fillcolor=lightyellow";
    d += fmt::format("  r{} [label=\"{}\"{}];\n", r, label, style);
  }
  for (std::size_t a = 0; a < g.edges.size(); ++a)
    for (int b : g.edges[a]) {
      const bool in_cycle = g.cycle_edges.count({static_cast<int>(a), b}) > 0;
      d += fmt::format("  r{} -> r{} [label=\"{}\"{}];\n", a, b, dot_escape(g.cell[a]),
                       in_cycle ? ", color=red, penwidth=2" : "");
    }
  d += "}\n";
  return d;
}

}  // namespace

HangReport hang_analyse(const std::vector<RankSnapshot>& ranks, const HostSession& session) {
  const std::size_t n = ranks.size();
  WaitGraph g;
  g.edges.resize(n);
  g.writers.resize(n);
  g.cell.resize(n);
  HangReport rep;
  rep.text = describe_ranks(ranks, session, g);
  std::string verdict = cycle_verdict(g);
  verdict += value_verdict(ranks, g);
  verdict += sink_verdict(ranks, g);
  verdict += cell_verdict(ranks, g);
  std::string graph;
  for (std::size_t a = 0; a < n; ++a)
    for (int b : g.edges[a]) graph += fmt::format("{}rank {} -> rank {}", graph.empty() ? "" : ", ", a, b);
  rep.text +=
      "\nWait-for graph: " + (graph.empty() ? std::string("no edges (no awaited cell has a known writer)") : graph);
  rep.text += verdict;
  rep.dot = wait_for_dot(ranks, g);
  return rep;
}

std::string hang_write_dot(const std::string& dot, const std::string& trace_dir) {
  static std::atomic<int> counter{0};
  std::filesystem::path dir = setting_string(Setting::DebugDir);
  if (dir.empty()) dir = trace_dir;
  if (dir.empty()) return "not written (set PLD_DEBUG_DIR to a directory, or turn swimlanes on, to get it as a file)";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto path = dir / fmt::format("pld-hang-{}-{}.dot", static_cast<int>(getpid()), ++counter);
  std::ofstream f(path);
  f << dot;
  f.close();
  if (!f) return fmt::format("(cannot write {}: {})", path.string(), std::strerror(errno));
  return path.string();
}

}  // namespace pld::detail
