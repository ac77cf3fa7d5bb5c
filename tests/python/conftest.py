"""Shared fixtures of the pld pytest suite: every test must leave no child process (pld reaps
every rank) and no new /dev/shm entry named pld behind, whatever happened on the ranks."""
import os

import pytest


def children():
    kids = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                kids += f.read().split()
        except OSError:
            pass
    return kids


def shm_entries():
    try:
        return {e for e in os.listdir("/dev/shm") if "pld" in e}
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def no_residue():
    """Fails the test when it leaves a rank process or a /dev/shm entry behind."""
    before = shm_entries()
    yield
    kids = children()
    leaked = shm_entries() - before
    assert not kids, f"child processes left behind: {kids}"
    assert not leaked, f"/dev/shm entries left behind: {sorted(leaked)}"


@pytest.fixture
def config2():
    import pld
    return pld.DistributedConfig(device_ids=[0, 1])
