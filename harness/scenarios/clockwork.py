"""One virtual clock that moves one thing at a time: the runner's source of determinism.

Every timer (the worker's deadlines, hedges, retries) and every provider wait (the
fakes' latency, hangs and stalls) is registered here. The driver moves time with
`advance()`: it lets everything already running finish or park, then wakes exactly
one sleeper or fires exactly one timer (the earliest; ties in registration order), and
waits again. Whatever the machine's load, the same scenario makes the same moves in the
same order, so its history is the same byte for byte; and a provider that "takes 30 s"
costs no wall time at all.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from harness.core.clock import VirtualClock
from harness.core.models import Attempt
from harness.errors import ScenarioError
from harness.runtime.scheduler import Timer

log = logging.getLogger(__name__)

SETTLE_LIMIT = 60.0
"""Real seconds the work in flight may take to finish or park before the run is declared
stuck (a deadlocked mutant, say): the only wall-clock bound, never part of the history.
Generous, because a task's real time is the machine's: at load 10 on 2 cores one
database round trip of a parked worker has been seen to take seconds."""

INSTANT_LIMIT = 500
"""Moves (tasks started, sleepers woken, timers fired) one virtual instant may take before
the run is declared stuck in a livelock: a broken engine that retries at once for ever
never lets time move, and every one of its tasks finishes, so SETTLE_LIMIT never fires.
A run raises it by MOVES_PER_JOB for each job it creates (`Turns.instant_limit`). The
bundled suite's busiest instant takes 42 moves, a simulated episode of 250 jobs 6. A
job's attempt loop takes 2-3 moves a turn, each slower than the last (the job's attempts
are read again): at 10,000 one such scenario held check for minutes, at 1,050 for 30 s."""
MOVES_PER_JOB = 20

TASK_THREADS = 1024
"""Tasks a run may have in flight at once, each on a thread of its own while it runs or
waits (a call parked on its latency holds its thread). Threads are made as they are
needed. At 32 an episode of 250 jobs parked 32 calls, and its next task waited for a
thread for ever: stuck after 60 s on a correct engine."""


@dataclass(eq=False)
class _Waiter:
    seq: int
    wake: datetime | None  # None: only a release ends it
    event: threading.Event | None = None
    granted: bool = False


@dataclass(order=True)
class _Due:
    due: datetime
    seq: int
    timer: Timer = field(compare=False)
    fn: Callable[[], object] = field(compare=False)


class Turns:
    """The shared virtual clock, its timers, its sleepers and the tasks in flight."""

    def __init__(self, clock: VirtualClock | None = None, *, pool_size: int = TASK_THREADS) -> None:
        self.clock = clock or VirtualClock()
        self._cv = threading.Condition()
        self._seq = itertools.count()
        self._timers: list[_Due] = []
        self._waiters: dict[int, _Waiter] = {}
        self._busy = 0  # tasks started and not finished (running or parked)
        self._parked = 0
        self._queued: deque[tuple[Callable[[], object], Future[object]]] = deque()
        self.peak_parked = 0
        self._instant: tuple[datetime, int] = (self.clock.now(), 0)  # its moves so far
        self.instant_limit = INSTANT_LIMIT  # moves one instant may take (a run raises it)
        self._pool_size = pool_size
        self._pool = ThreadPoolExecutor(pool_size, thread_name_prefix="scenario")
        self._local = threading.local()  # `task`: this thread runs a task (not the driver)
        self.errors: list[BaseException] = []

    # -- what the worker and the fakes call ---------------------------------------------

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        timer = Timer()
        with self._cv:
            due = self.clock.now() + timedelta(seconds=max(0.0, delay))
            heapq.heappush(self._timers, _Due(due, next(self._seq), timer, fn))
        return timer

    def spawn(self, fn: Callable[[], object]) -> Future[object]:
        """Queue a task; it starts only when the driver settles, after every task before
        it has finished or parked. One task runs at a time, so the order of what tasks
        record never depends on the machine's load."""
        future: Future[object] = Future()
        with self._cv:
            self._queued.append((fn, future))
        return future

    def _start(self, fn: Callable[[], object], future: Future[object]) -> None:
        def run() -> None:
            self._local.task = True
            try:
                future.set_result(fn())
            except BaseException as exc:
                self.errors.append(exc)
                future.set_exception(exc)
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()

        self._moved()
        if self._busy >= self._pool_size:
            raise ScenarioError(
                f"stuck: {self._pool_size} tasks in flight at once, the most a run may have"
            )
        self._busy += 1
        self._pool.submit(run)

    def _moved(self) -> None:
        """Count a move at the current virtual instant (the caller holds the lock)."""
        now = self.clock.now()
        moves = self._instant[1] + 1 if self._instant[0] == now else 1
        self._instant = (now, moves)
        if moves > self.instant_limit:
            raise ScenarioError(
                f"stuck: {self.instant_limit} moves (tasks, timers, wake-ups) at one virtual "
                "instant and time never moved on (a livelock: work that schedules itself "
                "again at once)"
            )

    def park(self, seconds: float | None, event: threading.Event | None = None) -> bool:
        """Block the calling task until the driver wakes it at now + `seconds` (None:
        only when `event` is set and released). True if `event` ended the wait."""
        with self._cv:
            wake = None if seconds is None else self.clock.now() + timedelta(seconds=seconds)
            waiter = _Waiter(next(self._seq), wake, event)
            self._waiters[waiter.seq] = waiter
            self._parked += 1
            self.peak_parked = max(self.peak_parked, self._parked)
            self._cv.notify_all()
            self._cv.wait_for(lambda: waiter.granted)
        return event is not None and event.is_set()

    def in_task(self) -> bool:
        """The calling thread runs a task (which may park), not the driver (a step's
        action or a timer, which must never wait: nothing would move time for it)."""
        return bool(getattr(self._local, "task", False))

    # -- what the driver calls -----------------------------------------------------------

    def settle(self, limit: float = SETTLE_LIMIT) -> None:
        """Start the queued tasks one at a time, each after the one before it finished
        or parked, until none is queued and every task in flight waits."""
        with self._cv:
            while True:
                if not self._cv.wait_for(lambda: self._busy <= self._parked, limit):
                    raise ScenarioError(
                        f"stuck: {self._busy - self._parked} task(s) neither finished nor "
                        f"waited within {limit:g} s"
                    )
                if not self._queued:
                    return
                self._start(*self._queued.popleft())

    def in_flight(self) -> int:
        with self._cv:
            return self._parked

    def _grant(self, waiter: _Waiter, *, move: bool = True) -> None:
        if move:
            self._moved()
        del self._waiters[waiter.seq]
        waiter.granted = True
        self._parked -= 1
        self._cv.notify_all()

    def _next(self) -> tuple[datetime, int, object] | None:
        candidates: list[tuple[datetime, int, object]] = []
        if self._timers:
            head = self._timers[0]
            candidates.append((head.due, head.seq, head))
        timed = [w for w in self._waiters.values() if w.wake is not None]
        if timed:
            first = min(timed, key=lambda w: (w.wake, w.seq))
            assert first.wake is not None
            candidates.append((first.wake, first.seq, first))
        return min(candidates, key=lambda c: (c[0], c[1])) if candidates else None

    def step(self, until: datetime) -> bool:
        """Make the next move due by `until`: one timer or one sleeper. False: none is."""
        self.settle()
        with self._cv:
            found = self._next()
            if found is None or found[0] > until:
                return False
            due, _, what = found
            if due > self.clock.now():
                self.clock.set(due)
            if isinstance(what, _Waiter):
                self._grant(what)
                return True
            heapq.heappop(self._timers)
            self._moved()
        if not what.timer.cancelled:  # type: ignore[attr-defined]
            try:
                what.fn()  # type: ignore[attr-defined]
            except Exception as exc:
                log.debug("timer callback failed: %s", exc)
                self.errors.append(exc)
        return True

    def advance(self, seconds: float) -> None:
        """Move virtual time forward by `seconds`, making every move due on the way."""
        self.advance_to(self.clock.now() + timedelta(seconds=seconds))

    def advance_to(self, until: datetime) -> None:
        while self.step(until):
            pass
        if until > self.clock.now():
            self.clock.set(until)
        self.settle()

    def release(self) -> int:
        """Wake, one at a time, every parked task whose event is set (a released hang)."""
        woken = 0
        while True:
            self.settle()
            with self._cv:
                ready = sorted(
                    (w for w in self._waiters.values() if w.event is not None and w.event.is_set()),
                    key=lambda w: w.seq,
                )
                if not ready:
                    return woken
                self._grant(ready[0])
                woken += 1

    def wake(self, event: threading.Event) -> int:
        """Wake, one at a time, the tasks parked on `event` alone (set it first): a paused
        task let go while every other parked task keeps waiting. How many there were."""
        woken = 0
        while True:
            self.settle()
            with self._cv:
                mine = [w for w in self._waiters.values() if w.event is event]
                if not mine:
                    return woken
                self._grant(min(mine, key=lambda w: w.seq))
                woken += 1

    def drain(self, limit: float = SETTLE_LIMIT) -> None:
        """Teardown: wake every parked task (in order) and let it finish; drop timers. When
        a task never finishes (the run was stuck), every parked task is woken at once all
        the same before the error is raised: a parked task's thread would keep the process
        from exiting."""
        with self._cv:
            self._timers.clear()
            self._queued.clear()
        try:
            while True:
                self.settle(limit)
                with self._cv:
                    if not self._waiters:
                        break
                    self._grant(min(self._waiters.values(), key=lambda w: w.seq), move=False)
            self.settle(limit)
        except ScenarioError:
            with self._cv:
                for waiter in sorted(self._waiters.values(), key=lambda w: w.seq):
                    self._grant(waiter, move=False)
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class WorkerScheduler:
    """One worker's view of the turns: its timers and tasks, which die with it.

    Implements `harness.runtime.scheduler.BaseScheduler`. After `kill()` the worker's
    pending timers never fire and nothing new it schedules runs. While `hold()` is on,
    the tasks it spawns (its sends) wait until `resume()` while its timers go on firing:
    a worker whose requests wait for a connection from its pool, between an attempt's
    start and its send."""

    def __init__(self, turns: Turns) -> None:
        self.turns = turns
        self._timers: list[Timer] = []
        self._held: list[tuple[Callable[[], object], Future[object]]] | None = None
        self.dead = False

    def hold(self) -> None:
        if self._held is None:
            self._held = []

    @property
    def holding(self) -> bool:
        return self._held is not None

    def resume(self, *, by_attempt: bool = False) -> int:
        """Queue the held tasks, in the order they were spawned (`by_attempt`: the worker's
        sends in their attempts' order, each after the tasks of no attempt); how many."""
        held, self._held = self._held or [], None
        if by_attempt:  # sends spawned on racing threads: their order is the race's
            held.sort(key=lambda task: _attempt_number(task[0]))
        for fn, future in held:
            if not self.dead:
                self.turns.spawn(fn).add_done_callback(functools.partial(_copy, into=future))
        return len(held)

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        if self.dead:
            timer = Timer()
            timer.cancel()
            return timer
        timer = self.turns.call_later(delay, fn)
        self._timers.append(timer)
        return timer

    def spawn(self, fn: Callable[[], object]) -> Future[object]:
        if self.dead:
            done: Future[object] = Future()
            done.set_result(None)
            return done
        if self._held is not None:
            waiting: Future[object] = Future()
            self._held.append((fn, waiting))
            return waiting
        return self.turns.spawn(fn)

    def kill(self) -> None:
        self.dead = True
        for timer in self._timers:
            timer.cancel()

    def close(self) -> None:
        pass


def _attempt_number(fn: Callable[[], object]) -> int:
    """The number of the attempt a worker's send is for (`Worker._run` spawns a `partial`
    of `_call(job, attempt, ...)`); 0 for any other task."""
    args = fn.args if isinstance(fn, functools.partial) else ()
    return next((a.number for a in args if isinstance(a, Attempt)), 0)


def _copy(done: Future[object], into: Future[object]) -> None:
    error = done.exception()
    if error is not None:
        into.set_exception(error)
    else:
        into.set_result(done.result())


class TurnTime:
    """The fakes' time on the turns (`fake_providers.BaseTime`): latency parks the
    calling request until the driver reaches its instant."""

    def __init__(self, turns: Turns) -> None:
        self.turns = turns

    def now(self) -> float:
        return self.turns.clock.now().timestamp()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.turns.park(seconds)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        if event.is_set():
            return True
        return self.turns.park(timeout, event)

    async def sleep_async(self, seconds: float) -> None:
        import asyncio

        await asyncio.to_thread(self.sleep, seconds)
