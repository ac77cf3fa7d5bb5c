"""Randomized arguments for every Python call that takes a signal or an atomic cell: notify, wait,
signal_fetch, test, wait_until_any / all / some, tensor.put_signal and the atomics — on views of
every dtype (signals must be INT32, atomics one of the four integer types), with cells in and out of
range, wrong ranks of offsets, bad peers and values at the int32 / dtype boundaries.

Case i is a pure function of (seed, i): the host builds the views it needs, every rank rebuilds the
same cases and runs them on its own cells. A valid call must give the model's result; an invalid one
must raise pld.UsageError naming the operation (and the dtype, when the dtype is all that is wrong).
PLD_FUZZ_SEED and PLD_FUZZ_CASES set the seed and the number of cases (as for the C++ fuzz tests).
"""
import os
import random

import numpy as np
import pytest

import pld

SEED = int(os.environ.get("PLD_FUZZ_SEED", "1"), 0)
CASES = int(os.environ.get("PLD_FUZZ_CASES", "2000"), 0) // 5
CHUNK = 40  # cases per dispatch: one window view each
RANKS = 2
I32 = (-2**31, 2**31 - 1)

DTYPES = [pld.DType.INT32] * 10 + [d for d in pld.DType.__members__.values() if d != pld.DType.INT32]
AMO_RANGE = {pld.DType.INT32: I32, pld.DType.INT64: (-2**63, 2**63 - 1), pld.DType.UINT32: (0, 2**32 - 1),
             pld.DType.UINT64: (0, 2**64 - 1)}
SIGNAL_OPS = ["notify", "wait", "signal_fetch", "test", "wait_until_any", "wait_until_all", "wait_until_some",
              "put_signal"]
AMO_OPS = ["atomic_fetch", "atomic_fetch_add", "atomic_swap", "atomic_compare_swap", "atomic_set", "atomic_add"]
CMPS = [pld.WaitCmp.Eq, pld.WaitCmp.Ne, pld.WaitCmp.Gt, pld.WaitCmp.Ge, pld.WaitCmp.Lt, pld.WaitCmp.Le]


def holds(v, cmp, e):
    return {pld.WaitCmp.Eq: v == e, pld.WaitCmp.Ne: v != e, pld.WaitCmp.Gt: v > e, pld.WaitCmp.Ge: v >= e,
            pld.WaitCmp.Lt: v < e, pld.WaitCmp.Le: v <= e}[cmp]


def expected_for(v, cmp, want=True):
    """An int32 that makes `v cmp e` hold (or fail, want=False); None when no int32 does."""
    e = {pld.WaitCmp.Eq: (v, v ^ 1), pld.WaitCmp.Ne: (v ^ 1, v), pld.WaitCmp.Gt: (v - 1, v),
         pld.WaitCmp.Ge: (v, v + 1), pld.WaitCmp.Lt: (v + 1, v), pld.WaitCmp.Le: (v, v - 1)}[cmp][0 if want else 1]
    return e if I32[0] <= e <= I32[1] else None


def wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


class Case:
    """One call: its op, the view (dtype, shape) it gets, its cell(s), peer and values."""

    def __init__(self, i):
        r = random.Random(SEED * 1_000_003 + i)
        self.op = r.choice(SIGNAL_OPS + AMO_OPS)
        self.dtype = r.choice(DTYPES if self.op in SIGNAL_OPS else DTYPES[8:] + list(AMO_RANGE) * 2)
        self.shape = tuple(r.randint(1, 4) for _ in range(r.randint(1, 2)))
        n = r.randint(1, 3) if self.op.startswith("wait_until") else 1
        self.cells = [self.draw_cell(r) for _ in range(n)]
        self.peer_fault = r.random() < 0.1 and self.op in ("notify", "put_signal") + tuple(AMO_OPS)
        self.peer_bad = r.choice([-1, RANKS, RANKS + 5])
        lo, hi = AMO_RANGE.get(self.dtype, I32) if self.op in AMO_OPS else I32
        edges = [lo, hi, lo + 1, hi - 1, 0, 1, -1, 2]
        self.values = [r.choice(edges) if r.random() < 0.5 else r.randint(lo, hi) for _ in range(n)]
        self.values = [min(max(v, lo), hi) for v in self.values]
        self.operand = min(max(r.choice(edges + [r.randint(lo, hi)]), lo), hi)
        self.operand_fault = self.op in AMO_OPS and self.op != "atomic_fetch" and r.random() < 0.08
        if self.operand_fault:
            self.operand = r.choice([lo - 1, hi + 1])
        self.cmp = r.choice(CMPS)
        self.set_op = r.choice([pld.NotifyOp.Set, pld.NotifyOp.AtomicAdd])
        self.want = r.random() < 0.5  # test: whether the condition should hold

    def draw_cell(self, r):
        cell = [r.randrange(e) for e in self.shape]
        fault = r.random()
        if fault < 0.08:
            cell[r.randrange(len(cell))] = r.choice([-1, self.shape[0] + r.randint(0, 2)])
        elif fault < 0.12:
            cell = cell + [0] if r.random() < 0.5 else cell[:-1] or [0, 0, 0]
        return tuple(cell)

    def cell_ok(self, cell):
        return len(cell) == len(self.shape) and all(0 <= c < e for c, e in zip(cell, self.shape))

    def dtype_ok(self):
        return self.dtype == pld.DType.INT32 if self.op in SIGNAL_OPS else self.dtype in AMO_RANGE

    def valid(self):
        return (self.dtype_ok() and all(self.cell_ok(c) for c in self.cells) and not self.peer_fault
                and not self.operand_fault)

    def __repr__(self):
        return (f"case(seed {SEED}) {self.op} on {self.dtype.short_name}{list(self.shape)} cells {self.cells} "
                f"values {self.values} operand {self.operand} cmp {self.cmp.name} peer_fault {self.peer_fault}")


def run_case(c, sig, dst, me):
    """Runs case c on this rank's view `sig`; returns what the model must match."""
    peer = c.peer_bad if c.peer_fault else me
    s = pld.system
    cell = c.cells[0]
    if c.op in AMO_OPS:
        if c.valid():
            s.atomic_set(sig, me, cell, c.values[0])
        expected = c.values[0] if c.want else c.values[0] ^ 1
        args = {"atomic_fetch": (), "atomic_compare_swap": (expected, c.operand)}.get(c.op, (c.operand,))
        got = getattr(s, c.op)(sig, peer, cell, *args)
        return got, s.atomic_fetch(sig, me, cell)
    if c.valid():  # prime the cells (a later cell wins where cells repeat)
        for cl, v in zip(c.cells, c.values):
            s.notify(sig, me, cl, v, pld.NotifyOp.Set)
    v = c.values[0]
    if c.op == "notify":
        s.notify(sig, peer, cell, c.operand, c.set_op)
        return s.signal_fetch(sig, cell)
    if c.op == "wait":
        e = expected_for(v, c.cmp)
        s.wait(sig, cell, v if e is None else e, c.cmp if e is not None else pld.WaitCmp.Eq)
        return None
    if c.op == "signal_fetch":
        return s.signal_fetch(sig, cell)
    if c.op == "test":
        e = expected_for(v, c.cmp, c.want)
        return s.test(sig, cell, v if e is None else e, c.cmp if e is not None else pld.WaitCmp.Eq)
    if c.op == "put_signal":
        src = np.full(dst.numpy().shape, float(me + 1), np.float32)
        pld.tensor.put_signal(dst, peer, src, sig, cell, 1, pld.NotifyOp.AtomicAdd)
        return s.signal_fetch(sig, cell), float(dst.numpy()[0])
    final = {}
    for cl, val in zip(c.cells, c.values):
        final[cl] = val
    lowest = min(final.values()) if c.valid() else 0
    got = getattr(s, c.op)(sig, c.cells, lowest, pld.WaitCmp.Ge)
    return got


def model(c, me):
    """What a valid case returns on rank me."""
    v = c.values[0]
    if c.op in AMO_OPS:
        lo, hi = AMO_RANGE[c.dtype]
        span = hi - lo + 1
        wrap = lambda x: (x - lo) % span + lo  # noqa: E731
        new = {"atomic_fetch": v, "atomic_fetch_add": wrap(v + c.operand), "atomic_add": wrap(v + c.operand),
               "atomic_swap": c.operand, "atomic_set": c.operand,
               "atomic_compare_swap": c.operand if c.want else v}[c.op]
        old = None if c.op in ("atomic_set", "atomic_add") else v
        return old, new
    if c.op == "notify":
        return c.operand if c.set_op == pld.NotifyOp.Set else wrap32(v + c.operand)
    if c.op == "wait":
        return None
    if c.op == "signal_fetch":
        return v
    if c.op == "test":  # without an int32 that makes it fail or hold, the case tests v == v
        return c.want or expected_for(v, c.cmp, c.want) is None
    if c.op == "put_signal":
        return wrap32(v + 1), float(me + 1)
    n = len(c.cells)
    return {"wait_until_any": "any", "wait_until_all": None, "wait_until_some": list(range(n))}[c.op]


def check(c, me, outcome):
    """'' when the outcome matches the model, else what went wrong."""
    ok, value = outcome
    if c.valid():
        if not ok:
            return f"{c}: raised {value}"
        want = model(c, me)
        if want == "any":
            return "" if 0 <= value < len(c.cells) else f"{c}: returned index {value}"
        return "" if value == want else f"{c}: returned {value!r}, the model says {want!r}"
    if ok:
        return f"{c}: returned {value!r} instead of raising"
    if not isinstance(value, pld.UsageError):
        return f"{c}: raised {type(value).__name__} ({value}), not pld.UsageError"
    text = str(value)
    if c.op not in text:
        return f"{c}: the message does not name {c.op}: {text}"
    only_dtype = not c.dtype_ok() and all(c.cell_ok(x) for x in c.cells) and not c.peer_fault
    if only_dtype and c.dtype.short_name not in text:
        return f"{c}: the message does not name the dtype {c.dtype.short_name}: {text}"
    if only_dtype and c.op in SIGNAL_OPS and "INT32" not in text:
        return f"{c}: the message does not say signals are INT32: {text}"
    return ""


def fuzz_kernel(dst, first, count, *views):
    me = pld.rank(pld.get_comm_ctx(dst))
    failures = []
    for i, sig in zip(range(first, first + count), views):
        c = Case(i)
        try:
            outcome = (True, run_case(c, sig, dst, me))
        except Exception as e:  # noqa: BLE001 - the check classifies it
            outcome = (False, e)
        if problem := check(c, me, outcome):
            failures.append(f"case {i}: {problem}")
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("chunk", range((CASES + CHUNK - 1) // CHUNK))
def test_signal_and_atomic_calls_give_the_right_result_or_a_named_error(chunk):
    first = chunk * CHUNK
    count = min(CHUNK, CASES - first)
    cases = [Case(i) for i in range(first, first + count)]

    def orch(h):
        dst = h.window(h.alloc_window_buffer((4,), pld.DType.FP32, "dst"), (4,), pld.DType.FP32)
        views = [h.window(h.alloc_window_buffer(128, f"c{i}"), c.shape, c.dtype) for i, c in enumerate(cases)]
        for r in range(RANKS):
            h.dispatch(r, fuzz_kernel, dst, first, count, *views)

    pld.run(pld.DistributedConfig(device_ids=list(range(RANKS))), orch)
