"""The hand-rolled self-clearing credit barrier that step 08 builds and explains; steps 09-15 reuse
it. (pld's own collectives use the same protocol.)

Cell [s, 0] of my signal counts credits from rank s (one writer per cell). Barrier g of a call
adds 1 to row `me` of every peer and waits until every peer's row of mine holds >= g. finish()
gives back the g credits I consumed: every cell then received exactly g increments from its
writer and one -g from its reader, so it is 0 again, whichever rank gets there first.
"""

import pld


class CreditBarrier:
    """Step 04's barrier, packaged for reuse over a [P, 1] int32 signal window."""

    def __init__(self, signal):
        ctx = pld.get_comm_ctx(signal)
        self.signal = signal
        self.me = pld.rank(ctx)
        self.n = pld.nranks(ctx)
        self.g = 0

    def sync(self):
        """Barrier g = 1, 2, ... of this call."""
        self.g += 1
        for p in range(self.n):
            if p != self.me:
                pld.system.notify(self.signal, p, (self.me, 0), 1, pld.NotifyOp.AtomicAdd)
        for s in range(self.n):
            if s != self.me:
                pld.system.wait(self.signal, (s, 0), self.g, pld.WaitCmp.Ge)

    def finish(self):
        """Once per call, after its last sync(): give back the g credits consumed, so my cells are
        0 again. AtomicAdd of -g, never Set(0): a fast peer may already have added its first credit
        of the NEXT call, and a Set would wipe it."""
        for s in range(self.n):
            if s != self.me:
                pld.system.notify(self.signal, self.me, (s, 0), -self.g, pld.NotifyOp.AtomicAdd)
        self.g = 0
