"""The sides of bench/peers/python_peers.py: its plan (rows, iterations, sizes as pld-bench
counts them), the data every side stages and checks (pld-bench's patterns), and the code each
side runs in its own processes: pld and pld-host (pld.run), mpi4py (under mpirun) and torch-gloo
(one process per rank). A side's rank 0 prints one JSON line per row on stdout."""
import json
import sys
import time

import numpy as np

OPS = ("allreduce", "broadcast", "allgather", "all_to_all", "all_to_all_v", "barrier")
BLOCKED = ("allgather", "all_to_all", "all_to_all_v")  # [P, SIZE / P] operands, as in pld-bench
SIDES = ("pld", "pld-host", "mpi4py", "torch-gloo")
PEERS = ("mpi4py", "torch-gloo")
MIB = 1 << 20
POISON = 253.0  # no rank sends it: copy values are < 251
ROOT = 0        # broadcast root
F32 = np.float32


# ----- the plan: rows, iterations and data, computed alike by every side's processes ------------

def plan(o, n):
    """[{op, bytes, count, cols, iters, warmup}] of P = n ranks (pld-bench's make_plan)."""
    rows = []
    for op in o.ops:
        sizes = [0] if op == "barrier" else o.sizes
        unit = 4 * n if op in BLOCKED else 4
        last = None
        for size in sizes:
            nbytes = 0 if op == "barrier" else max(unit, size // unit * unit)
            if nbytes == last:
                continue
            last = nbytes
            iters = o.iters or min(max(o.budget // max(nbytes, 1), o.min_iters), o.max_iters)
            warmup = max(5, iters // 10)
            if not rows:
                warmup = max(warmup, iters)  # a fresh process's first calls run on cold caches
            count = nbytes // 4
            rows.append({"op": op, "bytes": nbytes, "count": count, "cols": count // n if op in BLOCKED else count,
                         "iters": iters, "warmup": warmup})
    return rows


def shapes(row, n):
    """(data shape, aux shape): the collective's target and its second operand."""
    op, cols = row["op"], row["cols"]
    data = (n, cols) if op in BLOCKED else (max(row["count"], 1),)
    aux = (cols,) if op == "allgather" else (n, cols) if op in ("all_to_all", "all_to_all_v") else (1,)
    return data, aux


def capacity(rows, n, k):
    """Elements of the largest data (k = 0) or aux (k = 1) operand of the rows."""
    return max(int(np.prod(shapes(r, n)[k])) for r in rows)


def pages(nbytes):
    return max(1, -(-nbytes // 4096)) * 4096


def reduce_input(r, count):  # pld-bench's reduction pattern: (3r + 5i + 1) % 15
    return np.resize(((3 * r + 5 * np.arange(15) + 1) % 15).astype(F32), count)


def copy_input(r, count, first=0):  # pld-bench's copy pattern: (7r + 3i + 1) % 251, from element first
    period = ((7 * r + 3 * np.arange(251) + 1) % 251).astype(F32)
    return np.resize(np.roll(period, -(first % 251)), count)


def stage(op, me, data, aux, for_check):
    """Writes rank me's inputs; for the check also poisons the targets no input covers."""
    if op == "allreduce":
        data.reshape(-1)[:] = reduce_input(me, data.size)
    elif op == "broadcast":
        data.reshape(-1)[:] = copy_input(me, data.size)  # non-roots: overwritten
    elif op in BLOCKED:
        aux.reshape(-1)[:] = copy_input(me, aux.size)  # all_to_all: row d goes to rank d
        if for_check:
            data.fill(POISON)


def count_wrong(op, me, n, data):
    """Elements of rank me's result that differ from the expected values."""
    flat = data.reshape(-1)
    if op == "allreduce":
        want = sum(reduce_input(r, flat.size).astype(np.int64) for r in range(n)).astype(F32)
    elif op == "broadcast":
        want = copy_input(ROOT, flat.size)
    else:
        cols = data.shape[-1]
        first = 0 if op == "allgather" else me * cols  # all_to_all: row s is rank s's row me
        want = np.concatenate([copy_input(s, cols, first) for s in range(n)])
    return int(np.count_nonzero(flat != want))


def time_loop(call, barrier, warmup, iters):
    for _ in range(warmup):
        call()
    barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    return t0, time.perf_counter()


def barrier_stamps(me, barrier):
    """(enter, leave) of one barrier that the ranks reach 2 ms apart, on the machine-wide clock."""
    barrier()
    time.sleep(0.002 * me)
    enter = time.perf_counter()
    barrier()
    return enter, time.perf_counter()


def barrier_ok(stamps):
    return max(e for e, _ in stamps) <= min(leave for _, leave in stamps)


def emit(side, row, n, loop_s, wrong):
    """Prints one measurement for the parent (the side's rank 0); a wrong result fails the side."""
    if wrong:
        sys.exit(f"python_peers.py: {side} {row['op']} {row['bytes']} B at P={n}: {wrong} wrong value(s)")
    print(json.dumps({"side": side, "op": row["op"], "bytes": row["bytes"], "ranks": n,
                      "us": loop_s / row["iters"] * 1e6, "iters": row["iters"]}), flush=True)


# ----- pld and pld-host: one pld.run per P; module-level kernels --------------------------------

T0, T1, WRONG, ENTER, LEAVE = range(5)  # fields of a rank's result row


def pld_call(op, data, aux, sig, counts, recv):
    import pld
    t = pld.tensor
    return {"allreduce": lambda: t.allreduce(data, sig),
            "broadcast": lambda: t.broadcast(data, sig, root=ROOT),
            "allgather": lambda: t.allgather(aux, data, sig),
            "all_to_all": lambda: t.all_to_all(aux, data, sig),
            "all_to_all_v": lambda: t.all_to_all_v(aux, data, sig, counts, recv),
            "barrier": lambda: t.barrier(sig)}[op]


def pld_stage_kernel(op, data, aux, counts, recv, for_check):
    stage(op, pld_rank(data)[0], data.numpy(), aux.numpy(), for_check)
    counts.numpy()[:] = 1  # all_to_all_v: one row to every peer
    if for_check:
        recv.numpy()[:] = -1


def pld_verify_kernel(op, data, recv, res):
    me, n = pld_rank(data)
    res[WRONG] = count_wrong(op, me, n, data.numpy())
    if op == "all_to_all_v":
        res[WRONG] += int(np.count_nonzero(recv.numpy() != 1))


def pld_rank(window):
    import pld
    ctx = pld.get_comm_ctx(window)
    return pld.rank(ctx), pld.nranks(ctx)


def pld_kernel(op, data, aux, sig, counts, recv, res, warmup, iters):
    """The pld side of one row: stage, warm-up, barrier, timed loop; stage again, run once, check."""
    import pld
    me, _ = pld_rank(sig)
    barrier = lambda: pld.tensor.barrier(sig)  # noqa: E731
    call = pld_call(op, data, aux, sig, counts, recv)
    if op != "barrier":
        pld_stage_kernel(op, data, aux, counts, recv, False)
    res[T0], res[T1] = time_loop(call, barrier, warmup, iters)
    if op == "barrier":
        res[ENTER], res[LEAVE] = barrier_stamps(me, barrier)
    else:
        barrier()  # every rank is out of the loop before anyone stages again
        pld_stage_kernel(op, data, aux, counts, recv, True)
        call()
        pld_verify_kernel(op, data, recv, res)
    barrier()  # nobody still reads this rank's windows when the next row starts


def stamp_kernel(res, field, delay):
    time.sleep(delay)
    res[field] = time.perf_counter()


def pld_program(h, rows, res, host):
    import pld
    n = h.world_size()
    data_buf, aux_buf = (h.alloc_window_buffer(pages(capacity(rows, n, k) * 4), name)
                         for k, name in ((0, "data"), (1, "aux")))
    sig = h.window(h.alloc_window_buffer((n, 16), pld.DType.INT32, "sig"), (n, 16), pld.DType.INT32)
    counts = h.window(h.alloc_window_buffer((n,), pld.DType.INT32, "counts"), (n,), pld.DType.INT32)
    recv = h.window(h.alloc_window_buffer((n, 1), pld.DType.INT32, "recv"), (n, 1), pld.DType.INT32)
    for i, row in enumerate(rows):
        op, (dshape, ashape) = row["op"], shapes(row, n)
        data, aux = h.window(data_buf, dshape, pld.DType.FP32), h.window(aux_buf, ashape, pld.DType.FP32)
        if not host:
            for r in range(n):
                h.dispatch(r, pld_kernel, op, data, aux, sig, counts, recv, res[i][r], row["warmup"], row["iters"])
            continue
        builtin = {"allreduce": lambda: h.allreduce(data, sig),
                   "broadcast": lambda: h.broadcast(data, sig, root=ROOT),
                   "allgather": lambda: h.allgather(aux, data, sig),
                   "all_to_all": lambda: h.all_to_all(aux, data, sig),
                   "all_to_all_v": lambda: h.all_to_all_v(aux, data, sig, send_counts=counts, recv_counts=recv),
                   "barrier": lambda: h.barrier(sig)}[op]
        stages = lambda check: [h.dispatch(r, pld_stage_kernel, op, data, aux, counts, recv, check)  # noqa: E731
                                for r in range(n)]
        stamps = lambda field, delay=0.0: [h.dispatch(r, stamp_kernel, res[i][r], field, delay * r)  # noqa: E731
                                           for r in range(n)]
        stages(False)
        for _ in range(row["warmup"]):
            builtin()
        h.barrier(sig)
        stamps(T0)
        for _ in range(row["iters"]):
            builtin()
        stamps(T1)
        h.barrier(sig)
        if op == "barrier":
            stamps(ENTER, 0.002)
            h.barrier(sig)
            stamps(LEAVE)
        else:
            stages(True)
            builtin()
            for r in range(n):
                h.dispatch(r, pld_verify_kernel, op, data, recv, res[i][r])
        h.barrier(sig)


def pld_side(o, side):
    import pld
    n = o.ranks
    if side == "pld-host" and not hasattr(pld.Host, "allreduce"):
        print(json.dumps({"note": "pld.Host has no builtin collectives: pld-host skipped"}))
        return
    rows = plan(o, n)
    res = pld.HostTensor.zeros((len(rows), n, 5), pld.DType.FP64)
    heap = sum(pages(capacity(rows, n, k) * 4) for k in (0, 1)) + MIB
    config = pld.DistributedConfig(device_ids=list(range(n)), heap_bytes=heap)
    pld.run(config, lambda h, t: pld_program(h, rows, t, side == "pld-host"), res)
    out = res.numpy()
    for i, row in enumerate(rows):
        if row["op"] == "barrier":
            wrong = 0 if barrier_ok([(out[i, r, ENTER], out[i, r, LEAVE]) for r in range(n)]) else 1
        else:
            wrong = int(out[i, :, WRONG].sum())
        emit(side, row, n, float((out[i, :, T1] - out[i, :, T0]).max()), wrong)


# ----- mpi4py: python_peers.py under mpirun ------------------------------------------------------

def mpi_side(o):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    me, n = comm.Get_rank(), comm.Get_size()
    rows = plan(o, n)
    data_all, aux_all = np.zeros(capacity(rows, n, 0), F32), np.zeros(capacity(rows, n, 1), F32)
    for row in rows:
        op, (dshape, ashape), cols = row["op"], shapes(row, n), row["cols"]
        data = data_all[:int(np.prod(dshape))].reshape(dshape)
        aux = aux_all[:int(np.prod(ashape))].reshape(ashape)
        counts, displs = np.full(n, cols, np.int32), np.arange(n, dtype=np.int32) * cols
        send_v, recv_v = [aux, counts, displs, MPI.FLOAT], [data, counts, displs, MPI.FLOAT]
        call = {"allreduce": lambda: comm.Allreduce(MPI.IN_PLACE, data, op=MPI.SUM),
                "broadcast": lambda: comm.Bcast(data, root=ROOT),
                "allgather": lambda: comm.Allgather(aux, data),
                "all_to_all": lambda: comm.Alltoall(aux, data),
                "all_to_all_v": lambda: comm.Alltoallv(send_v, recv_v),
                "barrier": comm.Barrier}[op]
        stage(op, me, data, aux, False)
        t0, t1 = time_loop(call, comm.Barrier, row["warmup"], row["iters"])
        loop_s = comm.allreduce(t1 - t0, op=MPI.MAX)
        if op == "barrier":
            stamps = comm.allgather(barrier_stamps(me, comm.Barrier))
            wrong = 0 if barrier_ok(stamps) else 1
        else:
            comm.Barrier()
            stage(op, me, data, aux, True)
            call()
            wrong = comm.allreduce(count_wrong(op, me, n, data), op=MPI.SUM)
        if me == 0:
            emit("mpi4py", row, n, loop_s, wrong)
        elif wrong:
            sys.exit(1)  # every rank leaves; rank 0 says why


# ----- torch-gloo: P processes of python_peers.py ------------------------------------------------

def torch_side(o):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    me, n = o.rank, o.ranks
    dist.init_process_group("gloo", init_method="file://" + o.init, world_size=n, rank=me)
    rows = plan(o, n)
    data_all, aux_all = (torch.zeros(capacity(rows, n, k), dtype=torch.float32) for k in (0, 1))
    try:  # gloo of torch 1.13 may lack the flat allgather: then a list of the target's rows
        probe = torch.zeros(n)
        dist.all_gather_into_tensor(probe, torch.ones(1))
        flat_gather = True
    except (RuntimeError, AttributeError):
        flat_gather = False
    if me == 0:
        print(json.dumps({"note": "torch-gloo allgather: " + (
            "all_gather_into_tensor" if flat_gather else "all_gather into a list of the target's rows "
            "(gloo has no all_gather_into_tensor here)")}), flush=True)
    for row in rows:
        op, (dshape, ashape), cols = row["op"], shapes(row, n), row["cols"]
        data = data_all[:int(np.prod(dshape))].view(dshape)
        aux = aux_all[:int(np.prod(ashape))].view(ashape)
        rows_of = list(data.unbind(0)) if op == "allgather" else None
        splits = [cols] * n
        call = {"allreduce": lambda: dist.all_reduce(data),
                "broadcast": lambda: dist.broadcast(data, ROOT),
                "allgather": (lambda: dist.all_gather_into_tensor(data, aux)) if flat_gather else
                             (lambda: dist.all_gather(rows_of, aux)),
                "all_to_all": lambda: dist.all_to_all_single(data.view(-1), aux.view(-1)),
                "all_to_all_v": lambda: dist.all_to_all_single(data.view(-1), aux.view(-1), splits, splits),
                "barrier": dist.barrier}[op]
        stage(op, me, data.numpy(), aux.numpy(), False)
        t0, t1 = time_loop(call, dist.barrier, row["warmup"], row["iters"])
        loop = torch.tensor([t1 - t0], dtype=torch.float64)
        dist.all_reduce(loop, op=dist.ReduceOp.MAX)
        if op == "barrier":
            stamps = torch.zeros(n, 2, dtype=torch.float64)
            dist.all_gather(list(stamps.unbind(0)), torch.tensor(barrier_stamps(me, dist.barrier),
                                                                 dtype=torch.float64))
            wrong = 0 if barrier_ok(stamps.tolist()) else 1
        else:
            dist.barrier()
            stage(op, me, data.numpy(), aux.numpy(), True)
            call()
            bad = torch.tensor([count_wrong(op, me, n, data.numpy())], dtype=torch.int64)
            dist.all_reduce(bad)
            wrong = int(bad.item())
        if me == 0:
            emit("torch-gloo", row, n, float(loop.item()), wrong)
        elif wrong:
            sys.exit(1)
    dist.destroy_process_group()
