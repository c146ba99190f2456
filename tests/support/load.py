"""Cores kept busy by other processes: determinism and guarantees must not depend on the
machine being idle.

`Burners(2)` burns both cores while a test plays what must not change under load;
`Burners.beside()` every core but the one the test plays on. Run as
a script, `python tests/support/load.py [N]` burns N cores (default: all) until it is terminated;
`python3 dev.py test --busy` runs the whole suite beside it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from multiprocessing.synchronize import Event


def _burn(stop: Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


class Burners:
    """`cores` processes, each spinning until `stop`."""

    def __init__(self, cores: int) -> None:
        self.event = multiprocessing.Event()
        self.processes = [
            multiprocessing.Process(target=_burn, args=(self.event,), daemon=True)
            for _ in range(cores)
        ]

    @classmethod
    def beside(cls) -> Burners:
        """Every core but one busy: with the test's own process playing on that one, the
        machine is full, at half the burning of `Burners(2)` on 2 cores (the 180
        replays of the bundled suite burned about 35 CPU-s of CI's 2 cores)."""
        return cls(max(1, (os.cpu_count() or 2) - 1))

    def start(self) -> Burners:
        for process in self.processes:
            process.start()
        return self

    def stop(self) -> None:
        self.event.set()
        for process in self.processes:
            process.join(10)


def main(argv: list[str]) -> int:
    cores = int(argv[0]) if argv else os.cpu_count() or 1
    burners = Burners(cores).start()
    stopping = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    print(f"load.py: {cores} cores busy (pid {os.getpid()}) until terminated", flush=True)
    signal.sigwait(stopping)
    burners.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
