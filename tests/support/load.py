"""Both cores busy for the length of a test: determinism must not depend on the load."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from multiprocessing.synchronize import Event

import pytest


def _burn(stop: Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@pytest.fixture
def busy_cores() -> Iterator[None]:
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2)]
    for burner in burners:
        burner.start()
    yield
    stop.set()
    for burner in burners:
        burner.join(10)
