// Python kernels: how a dispatch names its Python function and carries its arguments, and how the
// rank runs it (kernel.cc, args.cc).
//
// Kernel identification (the contract a fork-once worker relies on): the first dispatch of a
// function registers it in this process's kernel table, under the id it gets there and the name
// "module:qualname". A dispatch frame carries both. In the rank the id is looked up first, and used
// when the table entry there has the same name (the rank process was forked after the function was
// registered: pld.run always; a DistributedWorker for functions registered before it started, see
// register_kernel); otherwise the rank imports `module` and follows `qualname`, which finds any
// module-level function, and fails with a UsageError naming the function when that does not work
// (a lambda, a nested function or one defined after the worker forked). A callable equal to a
// registered one of the same name (a bound method of the same object) keeps its id; bound methods
// and other callables without an import path reach a worker's ranks only through the id, so a
// DistributedWorker registers them before it forks.
#pragma once

#include "bindings.h"

#include <pld/detail/dispatch.hpp>

#include <cstdint>
#include <string>

namespace pld::python {

/// In a new rank process, after the fork: `thread` is its Python thread state, released (the
/// kernels take the GIL with it, and keep it between kernels while no other thread exists).
void rank_forked(PyThreadState* thread);

/// Registers `fn` in this process's kernel table (idempotent) and returns its id. A
/// DistributedWorker registers its programs' kernels before it forks its ranks.
std::uint64_t register_kernel(py::handle fn);

/// Encodes the dispatch arguments: window views and host tensors are noted on the writer (the
/// runtime delivers their domains and shared blocks to the rank), everything else by value.
void encode_args(detail::ArgWriter& writer, PyObject* const* args, std::size_t n);
/// Decodes them in the rank: window views bound to the rank's domains, host tensors as numpy
/// arrays over the shared block.
py::tuple decode_args(detail::ArgReader& reader);

void write_bytes(detail::ArgWriter& writer, const void* data, std::size_t size);
std::string read_string(detail::ArgReader& reader);

}  // namespace pld::python
