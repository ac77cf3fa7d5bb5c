"""The race detector from Python (DistributedConfig(race_check=...), PLD_DEBUG=race): a planted race
fails the run with both operations, the window, the missing edge and the Python frames of both
sides; the correct program passes; Warn mode finishes."""
import numpy as np
import pytest

import pld

N = 64


def produce_consume(data, sig, read_early):
    me = pld.rank(pld.get_comm_ctx(data))
    if me == 0:
        pld.tile.store(np.full((1, N), 7, np.float32), (0, 0), data)
        pld.system.notify(sig, 1, (0,), 1, pld.NotifyOp.AtomicAdd)
    else:
        if read_early:
            pld.tile.remote_load(data, 0, (0, 0), (1, N))  # the planted race: before the wait
        pld.system.wait(sig, (0,), 1, pld.WaitCmp.Ge)
        got = pld.tile.remote_load(data, 0, (0, 0), (1, N))
        assert (got == 7).all()


def orchestrate(h, read_early):
    d = h.alloc_window_buffer((1, N), pld.DType.FP32, "data")
    s = h.alloc_window_buffer((1,), pld.DType.INT32, "sig")
    for r in range(h.world_size()):
        h.dispatch(r, produce_consume, h.window(d, (1, N), np.float32), h.window(s, (1,), np.int32), read_early)


def config(check=pld.RaceCheck.Fail):
    return pld.DistributedConfig([0, 1], race_check=check, wait_timeout=30)


def test_wait_then_read_passes():
    pld.run(config(), lambda h: orchestrate(h, False))


def test_read_before_wait_names_both_python_lines():
    with pytest.raises(pld.RankError) as info:
        pld.run(config(), lambda h: orchestrate(h, True))
    msg = str(info.value)
    assert "data race on window 'data' bytes [0, 256) of rank 0" in msg
    assert "kernel test_race.produce_consume" in msg
    assert "tile::store" in msg and "tile::remote_load" in msg
    # both sides' frames: the store's line and the early remote_load's line
    assert 'test_race.py", line 15, in produce_consume' in msg
    assert 'test_race.py", line 19, in produce_consume' in msg
    assert "fix: rank " in msg


def test_warn_mode_finishes():
    pld.run(config(pld.RaceCheck.Warn), lambda h: orchestrate(h, True))


def test_race_check_is_a_config_field():
    c = pld.DistributedConfig([0, 1])
    assert c.race_check == pld.RaceCheck.Setting
    c.race_check = pld.RaceCheck.Off
    pld.run(c, lambda h: orchestrate(h, True))  # off: the racy program runs unchecked
