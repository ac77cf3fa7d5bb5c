// pld — a C++20 runtime for distributed programs in the symmetric memory + signals model.
//
//   #include <pld/pld.hpp>
//
// Host side (host.hpp): DistributedConfig, pld::run, Host, HostTensor.
// Comm domains (comm_domain.hpp): CommDomain on the host, CommCtx in a kernel.
// Kernel side (kernel.hpp): pld::system (notify / wait / comm ctx), pld::tile, pld::tensor;
// signal.hpp: signal_fetch, test, wait_until_any / all / some; put_signal and non-blocking
// transfers with quiet / fence (nbi.hpp); atomics on window cells (atomic.hpp):
// pld::system::atomic_fetch_add, atomic_compare_swap, ...
// See docs/ for the user guide and examples/tutorial/ for the step-by-step ladder.
#pragma once

#include <pld/atomic.hpp>
#include <pld/collectives.hpp>
#include <pld/comm_domain.hpp>
#include <pld/error.hpp>
#include <pld/host.hpp>
#include <pld/info.hpp>
#include <pld/kernel.hpp>
#include <pld/nbi.hpp>
#include <pld/signal.hpp>
#include <pld/task.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>
#include <pld/worker.hpp>
