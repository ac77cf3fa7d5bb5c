"""The helper every Python tutorial step shares: the ``-d`` command line, a golden checker and a
guard that turns a ``pld.Error`` into a message. Nothing here is pld API; it only keeps the steps
short (the Python twin of ``examples/tutorial/common/tutorial.hpp``).

    config, args = tutorial.parse_devices("01_hello_rank", "Step 01: ...")

    def body():
        pld.run(config, orchestrator, x, y)
        check = tutorial.Checker()
        check.expect("y", y, golden)
        return check.report()          # prints OK (0) or the first mismatches (1)

    sys.exit(tutorial.guarded(body))   # a pld.Error prints FAILED: ... (2)
"""

import argparse
import sys
import traceback

import numpy as np

import pld


def device_ids(text):
    """``0,1,2`` -> [0, 1, 2]; argparse reports a ValueError as a bad -d value (exit 2)."""
    ids = [int(part) for part in text.split(",") if part.strip()]
    if not ids:
        raise ValueError(f"no device id in {text!r}")
    return ids


def parse_devices(name, description, more_options=None):
    """Parses ``-d 0,1[,...]`` (device ids, one rank per id; default ``0,1``, or ``0..P-1`` under
    ``mpirun -n P``, where each MPI process is one rank) into a ``pld.DistributedConfig``, as
    PyPTO's examples do. Returns ``(config, args)``; ``args`` holds a step's own options, which
    ``more_options(parser)`` adds. ``--help`` prints the usage and exits 0; a bad command line (not
    a number, a negative or duplicate id) prints why and exits 2."""
    launched = pld.launcher_world_size()
    default = list(range(launched)) if launched > 0 else [0, 1]
    parser = argparse.ArgumentParser(prog=name, description=description)
    parser.add_argument("-d", "--device", dest="device_ids", type=device_ids, default=default,
                        metavar="IDS", help="comma-separated device ids, one rank per id (e.g. 0,1,2,3; default "
                        + ",".join(str(d) for d in default) + ")")
    if more_options is not None:
        more_options(parser)
    args = parser.parse_args()
    ids = ",".join(str(d) for d in args.device_ids)
    try:
        config = pld.DistributedConfig(device_ids=args.device_ids)
        config.validate()  # the same check pld.run makes, reported before anything starts
    except pld.Error as e:
        print(f"{name}: bad -d {ids}: {e}", file=sys.stderr)
        sys.exit(2)
    if launched > 0 and launched != config.world_size():
        print(f"{name}: -d lists {config.world_size()} devices but mpirun started {launched} processes "
              "(one rank each); omit -d under mpirun", file=sys.stderr)
        sys.exit(2)
    if pld.is_output_rank():
        print(f"{name}: {config.world_size()} ranks on devices {ids}")
    return config, args


def random(shape, seed):
    """float32 values uniform in [-1, 1) from a fixed seed: data that is only moved, or reduced in
    one fixed order."""
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape).astype(np.float32)


def small_integers(shape, seed, lo=-8, hi=8):
    """float32 values holding small whole numbers, uniform in [lo, hi], from a fixed seed. Sums,
    maxima and products of a few of them are exact in fp32 whatever the order of the operations,
    so a reduction computed by the ranks in any order can be checked exactly against a host
    golden."""
    return np.random.default_rng(seed).integers(lo, hi + 1, shape).astype(np.float32)


class Checker:
    """Compares results with a golden computed independently on the host. Equality is exact:
    every tutorial moves data, reduces small_integers() (exact in any order), or reduces in the one
    order the golden uses too (step 11)."""

    SHOWN = 8  # mismatches listed in the report; all of them are counted

    def __init__(self):
        self.checked = 0
        self.wrong = 0
        self.shown = []

    def expect(self, name, got, want):
        """Checks an array element by element (shapes must match), or one value."""
        if np.ndim(want) == 0 and np.ndim(got) == 0:
            self.checked += 1
            if not got == want:
                self._note(f"{name} = {got} but expected {want}")
            return
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            self._note(f"{name}: shape {list(got.shape)} but the golden has shape {list(want.shape)}")
            return
        self.checked += got.size
        for index in zip(*np.nonzero(got != want)):
            where = "".join(f"[{i}]" for i in index)
            self._note(f"{name}{where} = {got[index]} but expected {want[index]}")

    def report(self):
        """Prints OK and returns 0, or prints the first mismatches and returns 1. Under mpirun every
        process checks the same merged results and returns the same code; only rank 0 prints."""
        if not pld.is_output_rank():
            return 0 if self.wrong == 0 else 1
        if self.wrong == 0:
            print("OK")
            return 0
        print(f"MISMATCH: {self.wrong} of {self.checked} checked values differ; the first {len(self.shown)}:")
        for line in self.shown:
            print(f"  {line}")
        return 1

    def _note(self, line):
        self.wrong += 1
        if len(self.shown) < self.SHOWN:
            self.shown.append(line)


def guarded(body):
    """Runs ``body`` (which returns the exit code) and turns an exception into ``FAILED: ...`` and
    exit 2. A failure on a rank arrives as ``pld.RankError``, whose message names the rank, the
    dispatch and the kernel (with the rank's Python traceback); bad input found on the host arrives
    as ``pld.UsageError``."""
    try:
        return body()
    except pld.Error as e:
        print(f"FAILED: {e}", file=sys.stderr)
    except Exception:  # a bug in the step itself: show where
        print(f"FAILED: {traceback.format_exc()}", file=sys.stderr)
    return 2



# The two tiny kernels of the host-builtin paths (steps 11-17): copy between rank-local memory and
# my own copy of a window — a put / get to yourself (step 06).
def stage(src, win):
    """Kernel: my copy of the window `win` = the rank-local array `src`."""
    pld.tensor.put(win, pld.rank(pld.get_comm_ctx(win)), src)


def collect(win, dst):
    """Kernel: the rank-local array `dst` = my copy of the window `win`."""
    pld.tensor.get(dst, pld.rank(pld.get_comm_ctx(win)), win)
