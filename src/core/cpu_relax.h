// cpu_relax(): the body of a spin loop. On x86 `pause` lets the other hyper-thread run, saves
// power and avoids the pipeline flush (a memory-order machine clear) when the awaited cache line
// changes; elsewhere a compiler barrier.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pld::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace pld::detail
