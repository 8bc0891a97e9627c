"""Fixtures shared by the test modules that build vLLM layers outside a server."""

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def one_rank() -> Iterator[None]:
    """vLLM's linear layers ask for the tensor-parallel group: one process of one rank.

    vLLM keeps the group in module globals and refuses a second initialisation, so every test
    module shares this one for the whole session.
    """
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with set_current_vllm_config(VllmConfig()):
        ps.init_distributed_environment(1, 0, f"tcp://127.0.0.1:{port}", 0, "gloo")
        ps.initialize_model_parallel(1, 1)
        yield
        ps.destroy_model_parallel()
        ps.destroy_distributed_environment()
