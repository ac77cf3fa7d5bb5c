// The orchestrator's handles in Python: pld.Host and pld.CommDomain wrap the C++ objects of one
// orchestrator call and refuse use after the call has returned.
#pragma once

#include "bindings.h"

#include <pld/comm_domain.hpp>
#include <pld/host.hpp>

#include <memory>

namespace pld::python {

/// Shared by a call's Host and CommDomain handles: false once the orchestrator returned.
using CallAlive = std::shared_ptr<bool>;

/// Throws UsageError naming `api` when the call is over.
void check_alive(const CallAlive& alive, const char* api);

/// pld.Host: the Host of one orchestrator call. A DistributedWorker's call wraps its Host the same
/// way: PyHost{&host, alive}, with `*alive = false` once the orchestrator returned.
struct PyHost {
  Host* host;
  CallAlive alive;
  Host& get(const char* api) const {
    check_alive(alive, api);
    return *host;
  }
};

struct PyDomain {
  CommDomain domain;
  CallAlive alive;
};

/// Records `kernel(*args)` (`n` arguments) as a dispatch to `rank` (kernel.cc).
void record_python_dispatch(Host& host, int rank, py::handle kernel, PyObject* const* args, std::size_t n);

/// The host builtin collectives (collectives.cc).
void bind_host_collectives(py::class_<PyHost>& host);

}  // namespace pld::python
