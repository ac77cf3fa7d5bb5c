// Swimlane recording (docs/04-debugging.md#swimlanes). When enabled, each rank process records, per
// dispatch: its task records (TaskGraph), dependency edges, per-scope statistics and the
// notify / wait / collective / put / get events of every thread; at the end of the dispatch it
// writes them under <dir>/rank{r}/d{k}/ (k = the rank's k-th dispatch). The host merges the
// files of one call into a Chrome-trace / Perfetto JSON with a flow arrow from each notify to the
// wait it released (merge.cc). Off by default: then every hook is one predictable branch.
#pragma once

#include <pld/detail/window.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pld::detail::trace {

/// Set once in the host before the ranks fork (they inherit it).
struct Config {
  bool enabled = false;
  std::string dir;  // the DFX directory
};
void configure(const Config& config);
const Config& config();

extern std::atomic<bool> g_on;  // recording in this process (rank side, during a dispatch)
inline bool on() {
  return g_on.load(std::memory_order_relaxed);
}

std::int64_t now_ns();
/// Small per-process index of the calling thread (0 = the rank's main thread).
int thread_index();

enum class Kind : std::uint8_t { Notify, Wait, Collective, Put, Get, Task, Atomic };

struct Event {
  Kind kind = Kind::Notify;
  std::int64_t t0 = 0, t1 = 0;  // steady-clock ns
  int thread = 0;
  std::string name;        // collective / task name, or the signal's buffer name
  int peer = -1;           // notify: destination world rank; put/get: peer world rank
  std::uint64_t cell = 0;  // notify / wait: heap byte offset of the cell (at the destination)
  std::int64_t value = 0;  // notify: value; wait: expected; put/get: bytes
  std::int64_t seen = 0;   // wait: the value that satisfied it
  int op = 0;              // notify: NotifyOp; wait: WaitCmp
  std::string args;        // collectives: JSON object text
};
void record(Event event);

struct TaskRecord {
  int id = 0;
  std::string name;
  std::string scope;
  int thread = 0;
  std::int64_t ready = 0, start = 0, end = 0, finish = 0;  // ns: dispatched, started, body returned, completed
  std::vector<int> deps;
};
/// One TaskGraph::run: its tasks and peak figures.
struct ScopeRecord {
  std::string name;
  int threads = 0;
  int peak_ready = 0, peak_running = 0, peak_deferred = 0, peak_conditions = 0;
  std::vector<TaskRecord> tasks;
};
void record_scope(ScopeRecord scope);

/// Rank side, around every dispatch: starts recording; writes the dispatch's files.
void dispatch_begin(int world_rank, std::uint64_t index, const std::string& kernel);
void dispatch_end(bool ok);

/// The span of one collective call (a Collective event named `name`, its args from `target`,
/// `root` and `op` when >= 0): begun by the collective's entry point, ended when it returns or
/// throws. Not recording, it costs one relaxed load and a branch at each end.
class CollSpan {
 public:
  CollSpan(const char* name, const WindowDesc& target, int root = -1, int op = -1) {
    if (on()) [[unlikely]]
      begin(name, target, root, op);
  }
  ~CollSpan() {
    if (open_) [[unlikely]]
      end();
  }
  CollSpan(const CollSpan&) = delete;
  CollSpan& operator=(const CollSpan&) = delete;

 private:
  struct Open;
  void begin(const char* name, const WindowDesc& target, int root, int op);
  void end();
  Open* open_ = nullptr;
};

/// Host side: merges the files of ranks' dispatches [first[r], last[r]) into
/// <dir>/trace_call{call}.json; returns its path ("" when nothing was recorded).
std::string merge_call(std::uint64_t call, const std::vector<std::uint64_t>& first,
                       const std::vector<std::uint64_t>& last);
/// Host side, when a rank group starts: removes stale rank*/d* directories and trace files.
void clear_outputs();

}  // namespace pld::detail::trace
