# Type stubs of pld.run.
from typing import Any, Callable, Union

import numpy as np

from ._pld import DistributedConfig, HostTensor

def run(config: DistributedConfig, orchestrator: Callable[..., None], *host_tensors: Union[np.ndarray, HostTensor, Any]) -> None:
    """Runs orchestrator(h, *host_tensors) on the host and its dispatches on the ranks."""
