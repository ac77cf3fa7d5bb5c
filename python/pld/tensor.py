"""pld.tensor: data movement and collectives inside kernels. put / get (full slice, or the region
form with dst_offsets, src_offsets and shape, positionally as in C++ or by keyword), remote_store,
put_signal, the non-blocking put_nbi / get_nbi / put_signal_nbi, and the composite collectives
barrier, allreduce, broadcast, allgather, reduce_scatter, all_to_all, all_to_all_v with their
options as keyword arguments (op=pld.ReduceOp.Max, mode=..., root=..., core_num=...). The loops
run in the runtime's C++ with the GIL released."""
from ._pld import _tensor as _t

barrier = _t.barrier
allreduce = _t.allreduce
broadcast = _t.broadcast
allgather = _t.allgather
reduce_scatter = _t.reduce_scatter
all_to_all = _t.all_to_all
all_to_all_v = _t.all_to_all_v
remote_store = _t.remote_store
put = _t.put
get = _t.get
put_nbi = _t.put_nbi
get_nbi = _t.get_nbi
put_signal = _t.put_signal
put_signal_nbi = _t.put_signal_nbi

