// pld.shared_numpy(): numpy arrays allocated in pld's shared memory. A numpy memory handler
// (NEP 49) puts every array of at least `min_bytes` into a shared block, the storage of
// pld.HostTensor, so pld.run, DistributedWorker.run/submit and Host.dispatch pass such an array
// (or a contiguous view of one) to the ranks without copying it. Smaller arrays, and any array
// whose shared block cannot be had (the process's file-descriptor limit), stay in ordinary memory
// and take the copying path.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include "bindings.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <numpy/arrayobject.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace pld::python {

namespace {

// The shared blocks behind the arrays the handler allocated, by data pointer: the handler's free
// drops the block (to the pool of same-sized blocks, so a loop that allocates the same shapes
// every iteration maps nothing new).
struct LiveBlocks {
  struct Entry {
    detail::SharedBlock block;
    std::size_t bytes;  // as requested (the block is page-rounded)
  };
  std::mutex mutex;
  std::unordered_map<void*, Entry> blocks;

  static LiveBlocks& instance() {
    static auto* live = new LiveBlocks();  // never destroyed: arrays may outlive the module
    return *live;
  }
};

struct Context {
  std::size_t min_bytes;
};

void* shared_or_null(std::size_t size, bool zero) {
  try {
    detail::SharedBlock block = detail::shared_alloc(size, zero);
    void* p = block.base;
    auto& live = LiveBlocks::instance();
    std::lock_guard lock(live.mutex);
    live.blocks[p] = {std::move(block), size};
    return p;
  } catch (const std::exception&) {
    return nullptr;  // no fd or no memory for a block: the caller falls back to the heap
  }
}

/// Removes p's block from the live set (released when the returned block goes); id 0 if p is heap memory.
detail::SharedBlock take(void* p, std::size_t* bytes) {
  auto& live = LiveBlocks::instance();
  std::lock_guard lock(live.mutex);
  auto it = live.blocks.find(p);
  if (it == live.blocks.end()) return {};
  detail::SharedBlock block = std::move(it->second.block);
  *bytes = it->second.bytes;
  live.blocks.erase(it);
  return block;
}

void* handler_malloc(void* ctx, std::size_t size) {
  if (size >= static_cast<Context*>(ctx)->min_bytes)
    if (void* p = shared_or_null(size, false)) return p;
  return std::malloc(size);
}

void* handler_calloc(void* ctx, std::size_t n, std::size_t elsize) {
  if (elsize != 0 && n > SIZE_MAX / elsize) return nullptr;
  if (n * elsize >= static_cast<Context*>(ctx)->min_bytes)
    if (void* p = shared_or_null(n * elsize, true)) return p;
  return std::calloc(n, elsize);
}

void handler_free(void*, void* p, std::size_t) {
  std::size_t bytes = 0;
  if (take(p, &bytes).id == 0) std::free(p);
}

void* handler_realloc(void* ctx, void* p, std::size_t size) {
  std::size_t old = 0;
  detail::SharedBlock block = take(p, &old);
  if (block.id == 0) return std::realloc(p, size);
  void* q = handler_malloc(ctx, size);
  if (q == nullptr) {  // realloc's contract: the old memory stays valid
    auto& live = LiveBlocks::instance();
    std::lock_guard lock(live.mutex);
    live.blocks[p] = {std::move(block), old};
    return nullptr;
  }
  std::memcpy(q, p, std::min(old, size));
  return q;
}

void destroy_handler(PyObject* capsule) {
  auto* handler = static_cast<PyDataMem_Handler*>(PyCapsule_GetPointer(capsule, "mem_handler"));
  delete static_cast<Context*>(handler->allocator.ctx);
  delete handler;
}

/// Installs a handler that allocates arrays of at least min_bytes in shared memory for the current
/// context; returns the handler it replaced (for _shared_numpy_exit).
py::object enter(std::int64_t min_bytes) {
  if (min_bytes < 1)
    throw UsageError(
        fmt::format("pld.shared_numpy: min_bytes is {}; pass a positive number of bytes (the "
                    "smallest array to place in shared memory, default 65536)",
                    min_bytes));
  auto* handler = new PyDataMem_Handler{};
  std::snprintf(handler->name, sizeof handler->name, "pld_shared_numpy");
  handler->version = 1;
  handler->allocator = {new Context{static_cast<std::size_t>(min_bytes)}, handler_malloc, handler_calloc,
                        handler_realloc, handler_free};
  py::object capsule = py::reinterpret_steal<py::object>(PyCapsule_New(handler, "mem_handler", destroy_handler));
  if (!capsule) {
    delete static_cast<Context*>(handler->allocator.ctx);
    delete handler;
    throw py::error_already_set();
  }
  PyObject* old = PyDataMem_SetHandler(capsule.ptr());
  if (old == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(old);
}

void exit(py::handle old) {
  PyObject* replaced = PyDataMem_SetHandler(old.ptr());
  if (replaced == nullptr) throw py::error_already_set();
  Py_DECREF(replaced);
}

}  // namespace

std::optional<HostTensor> shared_view(py::handle value) {
  if (!PyArray_Check(value.ptr())) return std::nullopt;
  auto* a = reinterpret_cast<PyArrayObject*>(value.ptr());
  if (!PyArray_IS_C_CONTIGUOUS(a) || PyArray_NBYTES(a) == 0) return std::nullopt;
  std::uint64_t offset = 0;
  detail::SharedBlock block =
      detail::shared_block_at(PyArray_DATA(a), static_cast<std::size_t>(PyArray_NBYTES(a)), &offset);
  if (block.id == 0) return std::nullopt;
  HostTensor t;
  try {
    t.dtype = dtype_of(py::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(a))), "pld.shared_numpy");
  } catch (const UsageError&) {
    return std::nullopt;  // not a pld dtype: the copying path reports it
  }
  if (dtype_size(t.dtype) != static_cast<std::size_t>(PyArray_ITEMSIZE(a))) return std::nullopt;
  for (int i = 0; i < PyArray_NDIM(a); ++i) t.shape.push_back(static_cast<Index>(PyArray_DIM(a, i)));
  t.block = std::move(block);
  t.offset = offset;
  return t;
}

void bind_shared_numpy(py::module_& m) {
  if (_import_array() < 0) throw py::error_already_set();
  m.def("_shared_numpy_enter", &enter, py::arg("min_bytes"));
  m.def("_shared_numpy_exit", &exit, py::arg("old"));
  m.def(
      "_shared_view",
      [](py::handle a) -> py::object {
        auto t = shared_view(a);
        return t ? py::cast(std::move(*t)) : py::none();
      },
      py::arg("array"), "A pld.HostTensor over `array`'s memory when it is in shared memory, else None.");
  m.def(
      "in_shared_memory", [](py::handle a) { return shared_view(a).has_value(); }, py::arg("array"),
      "True when `array` is a C-contiguous numpy array in pld's shared memory (allocated under "
      "pld.shared_numpy(), or a view of a pld.HostTensor): pld passes it to the ranks without copying.");
}

}  // namespace pld::python
