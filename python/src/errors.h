// The Python exception classes of pld's C++ exceptions (errors.cc), for the files that raise them
// and for the kernel trampoline, which turns a Python kernel's exception back into a C++ one.
#pragma once

#include <pybind11/pybind11.h>

namespace pld::python {

enum class ErrorKind { Error, Usage, WaitTimeout, Aborted, Rank };

/// The Python class of `kind` (pld.Error, pld.UsageError, ...), valid once the module is loaded.
pybind11::handle error_class(ErrorKind kind);

/// Sets the Python error of the exception being handled (call it in a catch block), as pybind11's
/// own dispatcher does: pld's classes for pld's exceptions, pybind11's translations for the rest.
/// For the entry points written against the C API.
void set_python_error();

/// How a Python kernel's failure reads in a RankError message: "python kernel 'mod.name' raised
/// ValueError: ...", then the rank's traceback from kTracebackMarker on.
inline constexpr const char* kKernelMarker = "python kernel '";
inline constexpr const char* kTracebackMarker = "Traceback (most recent call last):";

}  // namespace pld::python
