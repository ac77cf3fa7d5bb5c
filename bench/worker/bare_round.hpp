// The floor of a dispatch round on this machine: a host process and P forked processes that hand
// one round through shared memory and nothing else — the host bumps a round counter, every
// process sees it, adds one to a reply counter and waits for the next round; the host waits for
// all P replies. Every side spins on the counters and yields its core every few polls, as pld's
// host and ranks do between dispatches. No runtime, no kernel, no message: what any
// host-and-P-processes design pays per round in process switches when P + 1 processes share the
// machine's cores.
#pragma once

#include <vector>

namespace bench {

/// Per-round times in microseconds of `rounds` rounds (after `warmup`) with `ranks` processes.
std::vector<double> bare_rounds(int ranks, int rounds, int warmup);

/// Microseconds of one hand-over between two processes on the same core (both yielding): the
/// machine's process-switch cost, which sets the floor above when processes outnumber cores.
double process_switch_us(int handoffs);

}  // namespace bench
