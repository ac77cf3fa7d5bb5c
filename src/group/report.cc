// Report helpers of the process groups: rank and dispatch names, kernel names, SIGUSR1 counting.
#include "group/report.h"

#include "debug/symbols.h"
#include "host/session.h"

#include <fmt/format.h>
#include <signal.h>

#include <mutex>

namespace pld::detail {

namespace {

std::atomic<unsigned> g_usr1_count{0};
std::mutex g_usr1_mutex;
int g_usr1_users = 0;
struct sigaction g_usr1_previous;

extern "C" void on_usr1(int) {
  g_usr1_count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Usr1Handler::Usr1Handler() {
  std::lock_guard lock(g_usr1_mutex);
  if (g_usr1_users++ > 0) return;
  struct sigaction sa = {};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, &g_usr1_previous);
}

Usr1Handler::~Usr1Handler() {
  std::lock_guard lock(g_usr1_mutex);
  if (--g_usr1_users == 0) sigaction(SIGUSR1, &g_usr1_previous, nullptr);
}

void Usr1Handler::restore_in_child() {
  std::lock_guard lock(g_usr1_mutex);
  if (g_usr1_users > 0) sigaction(SIGUSR1, &g_usr1_previous, nullptr);
  g_usr1_users = 0;
}

unsigned Usr1Handler::count() {
  return g_usr1_count.load(std::memory_order_relaxed);
}

const std::atomic<unsigned>& Usr1Handler::counter() {
  return g_usr1_count;
}

std::string kernel_name(void (*kernel)()) {
  std::string name = function_name(reinterpret_cast<const void*>(kernel));
  return name.empty() ? fmt::format("at {}", reinterpret_cast<void*>(kernel)) : name;
}

std::string rank_label(const std::vector<int>& device_ids, int rank) {
  return fmt::format("rank {} (device {})", rank, device_ids[static_cast<std::size_t>(rank)]);
}

std::string describe_dispatch(const HostSession& session, std::int64_t index) {
  const auto& ds = session.dispatches();
  if (index < 0 || static_cast<std::size_t>(index) >= ds.size()) return "a dispatch";
  const DispatchRecord& d = ds[static_cast<std::size_t>(index)];
  std::int64_t nth = 0;
  for (std::int64_t i = 0; i < index; ++i) nth += ds[static_cast<std::size_t>(i)].rank == d.rank;
  return fmt::format("its dispatch #{} (kernel {})", nth, kernel_name(d.kernel));
}

}  // namespace pld::detail
