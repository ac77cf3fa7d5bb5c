"""pld.system: the kernel side's synchronisation — get_comm_ctx / rank / nranks, notify / wait
(a release / an acquire), signal_fetch, test, wait_until_any / all / some, quiet / fence, and the
atomics on int32 / int64 / uint32 / uint64 window cells. Call them inside kernels; blocking calls
release the GIL."""
from ._pld import _system as _s
from ._pld import get_comm_ctx, nranks, rank  # noqa: F401

notify = _s.notify
wait = _s.wait
defer_wait = _s.defer_wait
signal_fetch = _s.signal_fetch
test = _s.test
wait_until_any = _s.wait_until_any
wait_until_all = _s.wait_until_all
wait_until_some = _s.wait_until_some
quiet = _s.quiet
fence = _s.fence
atomic_fetch = _s.atomic_fetch
atomic_fetch_add = _s.atomic_fetch_add
atomic_fetch_inc = _s.atomic_fetch_inc
atomic_swap = _s.atomic_swap
atomic_compare_swap = _s.atomic_compare_swap
atomic_fetch_and = _s.atomic_fetch_and
atomic_fetch_or = _s.atomic_fetch_or
atomic_fetch_xor = _s.atomic_fetch_xor
atomic_set = _s.atomic_set
atomic_add = _s.atomic_add
atomic_inc = _s.atomic_inc
atomic_and = _s.atomic_and
atomic_or = _s.atomic_or
atomic_xor = _s.atomic_xor
