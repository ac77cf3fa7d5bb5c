// Python's sys.stdout and sys.stderr in rank processes. A rank process ends with _exit, which does
// not flush Python's buffers, so pld flushes them: before a fork (a buffered line must not print
// twice), after every kernel, and when the rank exits. A forked rank writes its streams line by
// line (line-buffered, write-through): a kernel's lines reach the terminal as it prints them, also
// when it then hangs, and the end of a kernel has nothing left to flush in them. All need the GIL.
#pragma once

namespace pld::python {

/// Flushes sys.stdout and sys.stderr.
void flush_stdio();
/// After a kernel: flushes sys.stdout and sys.stderr unless they are the rank's line-buffered
/// streams (a kernel that replaced them, or a process that did not fork, flushes).
void flush_kernel_stdio();
/// In a new rank process: makes its sys.stdout and sys.stderr line-buffered and write-through.
void line_buffer_rank_stdio();

}  // namespace pld::python
