"""Running the points of a sweep: on a local pool of worker processes, in this process, or on
a Dask distributed cluster, with every finished run written to the run cache as it arrives.

The task (:func:`run_point`) is a pure function of a resolved scenario (JSON text) and the
metric specifications: it returns the run's record, which the caller writes. Nothing is
simulated twice: a run whose file is in the cache (with the metrics asked for) is taken from
it, and points with equal scenarios share one run.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from startlab import kernel
from startlab.result import run
from startlab.sweep.cache import FORMAT, RunCache, build_info
from startlab.sweep.metrics import Metric, compute_metrics
from startlab.sweep.model import Point

__all__ = [
    "TRACE_ENV",
    "ClusterError",
    "Execution",
    "Task",
    "execute",
    "run_point",
    "usable_record",
]

TRACE_ENV = "STARTLAB_SWEEP_TRACE"
"""If set to a file path, every simulation appends one line to it: ``key host pid seconds``
(for checking what a sweep recomputed)."""

MAX_ATTEMPTS = 3
"""A run whose worker process dies this many times is recorded as failed (local pool)."""

NO_WORKERS_TIMEOUT_S = 120.0
"""A Dask sweep stops when the cluster has had no worker for this long."""

RECONNECT_TIMEOUT_S = 30.0
"""A Dask sweep stops when it has lost its scheduler for this long."""


class ClusterError(RuntimeError):
    """The Dask cluster can't be used or was lost. Runs finished so far are kept: running the
    same sweep again resumes."""


@dataclass(frozen=True)
class Task:
    """One simulation to run."""

    key: str
    scenario: str
    """Resolved scenario, canonical JSON."""
    world: str = "simulator"
    """``"simulator"``, or ``"kernel"``: run on Linux's TCP over the link emulator."""


@dataclass
class Execution:
    """What :func:`execute` did."""

    records: dict[str, dict[str, Any]]
    """Run key -> record (as in the run file), for every point's key."""
    runs: int = 0
    """Distinct runs (points with equal scenarios share one)."""
    cached: int = 0
    """Runs taken from the cache."""
    simulated: int = 0
    """Runs simulated now."""
    failed: int = 0
    """Runs whose record is an error (from the cache or now)."""
    wall_time_s: float = 0.0
    where: str = ""
    """``"2 local processes"``, ``"this process"`` or ``"Dask cluster tcp://..."``."""
    notes: list[str] = field(default_factory=list)


# -- the task ------------------------------------------------------------------------------------


def run_point(
    key: str,
    scenario: str,
    metrics: Sequence[Mapping[str, Any]],
    series_dir: str | None = None,
    world: str = "simulator",
) -> dict[str, Any]:
    """Simulate one resolved scenario (or run it on the kernel, ``world="kernel"``) and compute
    its metrics: the task every executor runs.

    Returns the run's record: ``key``, ``status`` (``ok`` or ``error``), ``error``,
    ``stage`` of a failure (``simulation`` or ``metrics``), ``metrics`` (metric id -> value),
    ``stats`` (``events``, ``sim_time_ns``, ``wall_time_s`` of the simulation, ``task_time_s``),
    ``build`` (:func:`~startlab.sweep.cache.build_info` of the worker) and ``worker``
    (``host``, ``pid``, ``finished``: when, in seconds since the epoch).
    Scenario and metric errors are recorded, not raised. With ``series_dir`` (a run cache
    folder) the whole result is kept there too (:meth:`RunCache.put_series`).
    """
    started = time.perf_counter()
    record: dict[str, Any] = {
        "format": FORMAT,
        "key": key,
        "status": "ok",
        "error": None,
        "stage": None,
        "metrics": {},
        "stats": {},
        "build": build_info(),
        "worker": {"host": socket.gethostname(), "pid": os.getpid()},
    }
    try:
        if world == "kernel":
            result = kernel.run(json.loads(scenario))
        else:
            result = run(json.loads(scenario))
    except kernel.KernelUnavailable as e:
        record.update(status="error", stage="kernel", error=f"the kernel world is unavailable: {e}")
    except ValueError as e:  # ScenarioError: what the core said
        record.update(status="error", stage="simulation", error=str(e))
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except BaseException as e:
        record.update(status="error", stage="simulation", error=f"{type(e).__name__}: {e}")
    else:
        stats = result.stats
        record["stats"] = {
            "events": int(stats.get("events", 0)),
            "sim_time_ns": int(stats.get("sim_time_ns", 0)),
            "wall_time_s": float(stats.get("wall_time_s", 0.0)),
        }
        try:
            values, errors = compute_metrics(result, [Metric.from_json(m) for m in metrics])
        except Exception as e:
            values, errors = {}, [f"metrics: {type(e).__name__}: {e}"]
        record["metrics"] = values
        if errors:
            record.update(status="error", stage="metrics", error="; ".join(errors))
        if series_dir is not None:
            try:
                RunCache(series_dir).put_series(key, result)
            except OSError as e:
                record.update(status="error", stage="series", error=f"keeping the series: {e}")
    elapsed = time.perf_counter() - started
    record["stats"]["task_time_s"] = elapsed
    record["worker"]["finished"] = time.time()
    trace = os.environ.get(TRACE_ENV)
    if trace:
        line = f"{key} {socket.gethostname()} {os.getpid()} {elapsed:.6f}\n"
        with Path(trace).open("a", encoding="utf-8") as f:
            f.write(line)
    return record


def _worker_build() -> dict[str, str]:
    """Run on every Dask worker before a sweep: the worker's build (or the import error)."""
    return build_info()


def usable_record(
    record: Mapping[str, Any] | None, metric_ids: Sequence[str], *, retry_failed: bool = False
) -> bool:
    """Whether a cached record answers a run: a success with every metric asked for, or a
    failure (unless ``retry_failed``) that no new metric could change."""
    if record is None:
        return False
    has_metrics = set(metric_ids) <= set(record.get("metrics") or {})
    if record.get("status") == "ok":
        return has_metrics
    if retry_failed:
        return False
    return record.get("stage") != "metrics" or has_metrics


# -- execute -------------------------------------------------------------------------------------


def execute(
    points: Sequence[Point] | Sequence[Task],
    cache_dir: str | os.PathLike[str],
    *,
    metrics: Sequence[Metric],
    jobs: int | None = None,
    cluster: Any = None,
    progress: bool | None = None,
    retry_failed: bool = False,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    label: str = "sweep",
    series: bool = False,
) -> Execution:
    """Run every point not already in the cache and write each record there as it finishes.

    ``points``: :class:`~startlab.sweep.model.Point` or :class:`Task` objects (anything with
    ``key`` and ``scenario``); equal keys are run once. ``jobs``: local worker processes
    (default: every core; ``0`` runs in this process). ``cluster``: a Dask scheduler address
    (``"tcp://host:8786"``) or a ``distributed.Client``; then ``jobs`` is not used.
    ``progress``: a progress bar on stderr (``None``: a bar on a terminal, a line every few
    seconds otherwise). ``retry_failed``: simulate again the runs recorded as failed.
    ``on_record`` is called with each new record after it is written. ``series``: keep the
    whole result of every run in the cache too (:meth:`RunCache.get_series`; on a Dask
    cluster the workers must see ``cache_dir``); a run without it is simulated again.

    Raises :class:`ClusterError` if the cluster is unreachable or lost, ``KeyboardInterrupt``
    when interrupted; the runs written until then stay in the cache.
    """
    started = time.perf_counter()
    cache = RunCache(cache_dir)
    cache.remove_stale_temporaries()
    metric_specs = [m.to_json() for m in metrics]
    metric_ids = [m.id for m in metrics]
    local_build = build_info()

    scenarios: dict[str, str] = {}
    worlds: dict[str, str] = {}
    for point in points:
        scenarios.setdefault(point.key, point.scenario)
        worlds.setdefault(point.key, getattr(point, "world", "simulator"))
    execution = Execution(records={}, runs=len(scenarios))
    todo: list[Task] = []
    previous: dict[str, dict[str, Any]] = {}
    for key, scenario in scenarios.items():
        record = cache.get(key)
        usable = usable_record(record, metric_ids, retry_failed=retry_failed)
        if usable and series and record is not None and record.get("stage") in (None, "metrics"):
            usable = cache.has_series(key)  # a run that went through, without its series
        if usable:
            assert record is not None
            execution.records[key] = record
            execution.cached += 1
            execution.failed += record["status"] != "ok"
        else:
            if record is not None and record.get("status") == "ok":
                previous[key] = record
            todo.append(Task(key, scenario, worlds[key]))
    # Kernel runs need the machine to themselves: on a cluster, workers that declare a
    # "testbed" resource take them one at a time; here they run in this process after the
    # simulations, one after the other.
    kernel_todo = [t for t in todo if t.world == "kernel"]
    if cluster is None:
        todo = [t for t in todo if t.world != "kernel"]
        if kernel_todo:
            execution.notes.append(
                f"{len(kernel_todo)} kernel run{'s' if len(kernel_todo) > 1 else ''} in this "
                "process after the simulations, one at a time"
            )

    backend: _Backend
    if not todo and kernel_todo:
        backend = _Inline()
        execution.where = "this process (kernel runs, one at a time)"
    elif not todo:
        backend = _Inline()
        execution.where = "nothing to run"
    elif cluster is not None:
        backend = _Dask(cluster)
        execution.where = backend.where
    elif jobs == 0:
        backend = _Inline()
        execution.where = "this process"
    else:
        count = min(jobs or _cores(), len(todo))
        if count < 1:
            raise ValueError(f"jobs must be 0 or more, not {jobs}")
        backend = _LocalPool(count)
        execution.where = f"{count} local process{'es' if count > 1 else ''}"

    bar = _Progress(label, execution.runs, execution.cached, execution.failed, progress)
    try:
        series_dir = str(cache.directory) if series else None
        records = backend.run(todo, metric_specs, series_dir)
        if cluster is None and kernel_todo:
            records = itertools.chain(records, _Inline().run(kernel_todo, metric_specs, series_dir))
        for record in records:
            key = record["key"]
            if record.get("build") != local_build:  # never keep a run under another's key
                found = (record.get("build") or {}).get("build")
                if isinstance(backend, _Dask):
                    host = (record.get("worker") or {}).get("host")
                    raise ClusterError(
                        f"a worker on {host} runs startlab build {found}, this process "
                        f"{local_build['build']}: install the same startlab on the workers"
                    )
                raise ClusterError(
                    f"the simulator changed on disk during the sweep (a new worker runs build "
                    f"{found}, this process {local_build['build']}): run the sweep again"
                )
            old = previous.get(key)
            if old is not None:  # keep the metrics it had that weren't asked for this time
                record["metrics"] = {**old.get("metrics", {}), **record["metrics"]}
            record["scenario"] = json.loads(scenarios[key])
            cache.put(record)
            execution.records[key] = record
            execution.simulated += 1
            execution.failed += record["status"] != "ok"
            bar.update(execution.failed)
            if on_record is not None:
                on_record(record)
    finally:
        bar.close()
        execution.wall_time_s = time.perf_counter() - started
    return execution


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# -- progress ------------------------------------------------------------------------------------


class _Progress:
    """A tqdm bar on a terminal (or when asked), else a line every 10 s on stderr."""

    def __init__(
        self, label: str, total: int, done: int, failed: int, progress: bool | None
    ) -> None:
        self.total, self.done, self.started = total, done, time.monotonic()
        self.bar: Any = None
        self.plain = False
        self.last_line = self.started
        if progress is None:
            progress = sys.stderr.isatty()
            self.plain = not progress and total > done
        if progress and total > done:
            from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

            self.bar = tqdm(
                total=total,
                initial=done,
                desc=label,
                unit="run",
                file=sys.stderr,
                dynamic_ncols=True,
                smoothing=0.1,
            )
            if failed:
                self.bar.set_postfix(failed=failed, refresh=False)

    def update(self, failed: int) -> None:
        self.done += 1
        if self.bar is not None:
            if failed:
                self.bar.set_postfix(failed=failed, refresh=False)
            self.bar.update(1)
        elif self.plain:
            now = time.monotonic()
            if now - self.last_line >= 10 or self.done == self.total:
                self.last_line = now
                print(
                    f"{self.done}/{self.total} runs, {failed} failed, {now - self.started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- backends ------------------------------------------------------------------------------------


class _Backend:
    def run(
        self, tasks: Sequence[Task], metrics: list[dict[str, Any]], series_dir: str | None
    ) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


class _Inline(_Backend):
    """Every run in this process, one after the other."""

    def run(
        self, tasks: Sequence[Task], metrics: list[dict[str, Any]], series_dir: str | None
    ) -> Iterator[dict[str, Any]]:
        for task in tasks:
            yield run_point(task.key, task.scenario, metrics, series_dir, task.world)


_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder this startlab package is in."""

_BOOTSTRAP = (
    "import sys; root = sys.argv[1]; "
    "root in sys.path or sys.path.insert(0, root); "
    "from startlab.sweep.worker import main; sys.exit(main(sys.argv[2:]))"
)
"""A worker's program: import startlab from where this process did (if the interpreter would
not find it there by itself), then serve tasks on the socket given as its argument."""


class _Process:
    """A local worker process, running :func:`startlab.sweep.worker.main` in a fresh
    interpreter and talking to the parent over a socket. A fresh interpreter rather than
    ``multiprocessing``: nothing of the caller's ``__main__`` is imported again, so a script or
    notebook needs no ``if __name__ == "__main__"`` guard. It imports the same startlab as this
    process, and runs in its own session, so that Ctrl-C reaches only the parent, which stops
    it."""

    def __init__(self) -> None:
        parent, child = socket.socketpair()
        env = dict(os.environ)
        env.setdefault("POLARS_MAX_THREADS", "1")  # one core per worker
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, _PACKAGE_ROOT, str(child.fileno())],
                pass_fds=[child.fileno()],
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.connection = multiprocessing.connection.Connection(parent.detach())
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.terminate()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()


@dataclass
class _Worker:
    process: Any
    connection: multiprocessing.connection.Connection
    sent: deque[Task] = field(default_factory=deque)
    """Tasks sent and not answered yet, in order: the first is the one running."""


PREFETCH = 2
"""Tasks sent ahead to each local worker, so that it never waits for the parent to write the
previous result."""


class _LocalPool(_Backend):
    """Worker processes (:class:`_Process`), each given up to :data:`PREFETCH` tasks that it
    runs in order. A worker that dies (killed, out of memory, a crash in the core) is replaced;
    the run it was on is given to another worker, up to :data:`MAX_ATTEMPTS` times, and the
    runs queued behind it are given back without counting, so the culprit of a crash is known
    exactly."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.series_dir: str | None = None

    def _start(self) -> _Worker:
        process = _Process()
        return _Worker(process, process.connection)

    def run(
        self, tasks: Sequence[Task], metrics: list[dict[str, Any]], series_dir: str | None
    ) -> Iterator[dict[str, Any]]:
        self.series_dir = series_dir
        queue = deque(tasks)
        attempts: dict[str, int] = {}
        workers: list[_Worker] = []
        try:
            workers = [self._start() for _ in range(min(self.jobs, len(queue)))]
            while True:
                self._dispatch(workers, queue, metrics)
                busy = [w for w in workers if w.sent]
                if not busy:
                    return
                waitables: list[Any] = [w.connection for w in busy]  # readable on exit too
                ready = multiprocessing.connection.wait(waitables, timeout=5.0)
                for worker in busy:
                    reply = None
                    if worker.connection in ready:
                        with contextlib.suppress(EOFError, OSError):
                            reply = worker.connection.recv()
                    if reply is not None:
                        task = worker.sent.popleft()
                        kind, payload = reply
                        if kind == "record":
                            self._dispatch(workers, queue, metrics, only=worker)  # busy first
                            yield payload
                            continue
                        crash = str(payload)
                    elif worker.connection in ready:  # closed: the process died
                        worker.process.join(1.0)
                        task = worker.sent.popleft()
                        crash = f"the worker process died (exit code {worker.process.exitcode})"
                    else:
                        continue
                    # the worker failed on `task`: give back what was queued behind it,
                    # replace the worker, and try `task` again or give up on it
                    queue.extendleft(reversed(worker.sent))
                    worker.sent.clear()
                    self._replace(workers, worker)
                    attempts[task.key] = attempts.get(task.key, 0) + 1
                    if attempts[task.key] >= MAX_ATTEMPTS:
                        yield _crash_record(task.key, f"{crash}, {MAX_ATTEMPTS} times on this run")
                    else:
                        queue.appendleft(task)
        finally:
            self._stop(workers)

    def _dispatch(
        self,
        workers: list[_Worker],
        queue: deque[Task],
        metrics: list[dict[str, Any]],
        only: _Worker | None = None,
    ) -> None:
        for worker in [only] if only is not None else list(workers):
            while queue and len(worker.sent) < PREFETCH:
                if not worker.sent and not worker.process.is_alive():
                    worker = self._replace(workers, worker)  # died idle: nobody's fault
                task = queue.popleft()
                try:
                    worker.connection.send((task.key, task.scenario, metrics, self.series_dir))
                except OSError:  # it died: the sentinel will tell
                    queue.appendleft(task)
                    break
                worker.sent.append(task)

    def _replace(self, workers: list[_Worker], worker: _Worker) -> _Worker:
        with contextlib.suppress(Exception):
            worker.connection.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(5.0)
        fresh = self._start()
        if worker in workers:
            workers[workers.index(worker)] = fresh
        return fresh

    def _stop(self, workers: list[_Worker]) -> None:
        for worker in workers:
            if not worker.sent:
                with contextlib.suppress(Exception):
                    worker.connection.send(None)
            else:  # interrupted while running: its runs are lost, nothing was written for them
                with contextlib.suppress(Exception):
                    worker.process.terminate()
        deadline = time.monotonic() + 5.0
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1.0)
            with contextlib.suppress(Exception):
                worker.connection.close()


def _crash_record(key: str, error: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "key": key,
        "status": "error",
        "error": error,
        "stage": "crash",
        "metrics": {},
        "stats": {},
        "build": build_info(),
        "worker": None,
    }


class _Dask(_Backend):
    """The runs as tasks on a Dask distributed cluster: ``client.submit`` with retries, results
    taken with ``as_completed`` and written as they arrive. The scheduler gives the run of a
    worker that dies to another worker; a run that kills several workers is recorded as
    failed. Losing the scheduler (or every worker for long) stops the sweep with
    :class:`ClusterError`."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        address = getattr(cluster, "scheduler_address", None) or getattr(
            getattr(cluster, "scheduler", None), "address", None
        )
        self.address = str(address if address is not None else cluster)
        self.where = f"Dask cluster {self.address}"

    def _client(self) -> tuple[Any, bool]:
        try:
            import distributed
        except ImportError:
            raise ClusterError(
                "running on a cluster needs Dask distributed: pip install 'startlab[cluster]'"
            ) from None
        dask: Any = distributed  # untyped: everything from it is Any here
        if isinstance(self.cluster, dask.Client):
            return self.cluster, False
        if not isinstance(self.cluster, str):
            address = getattr(self.cluster, "scheduler_address", None)
            if address is None:
                raise ClusterError(f"not a Dask scheduler address or client: {self.cluster!r}")
            self.cluster = address
        try:
            return dask.Client(self.cluster, timeout="20s", set_as_default=False), True
        except (OSError, TimeoutError, ValueError) as e:
            raise ClusterError(
                f"cannot connect to the Dask scheduler at {self.cluster}: {e}"
            ) from None

    def run(
        self, tasks: Sequence[Task], metrics: list[dict[str, Any]], series_dir: str | None
    ) -> Iterator[dict[str, Any]]:
        import distributed

        dask: Any = distributed
        client, owned = self._client()
        futures: list[Any] = []
        lost = False
        # Task keys name the run and the metrics asked for: equal tasks (from another client
        # too) are computed once, different metric sets of one run are not confused.
        asked = hashlib.sha256(
            json.dumps([metrics, series_dir], sort_keys=True).encode()
        ).hexdigest()[:8]
        try:
            self._check_workers(client)
            for task in tasks:
                futures.append(
                    client.submit(
                        run_point,
                        task.key,
                        task.scenario,
                        metrics,
                        series_dir,
                        task.world,
                        key=f"startlab-run-{task.key}-{asked}",
                        retries=2,
                        pure=False,
                        # A kernel run takes a whole testbed machine: only workers started
                        # with `--resources testbed=1` run them, one at a time each.
                        **({"resources": {"testbed": 1}} if task.world == "kernel" else {}),
                    )
                )
            keys = {id(f): t.key for f, t in zip(futures, tasks, strict=True)}
            pending = len(futures)
            finished = dask.as_completed(futures, loop=client.loop)
            health = _Health(client)
            while pending:
                batch = finished.next_batch(block=False) if finished.has_ready() else []
                if not batch:
                    health.check()
                    time.sleep(0.02)
                    continue
                for future in batch:
                    if future.status == "lost" and getattr(client, "status", "") == "running":
                        # Its result was on a worker that died before this client fetched it;
                        # the scheduler, still here, computes it again while the future is
                        # held: wait for it once more.
                        finished.add(future)
                        continue
                    pending -= 1
                    yield self._record(future, keys[id(future)])
                    future.release()
        except ClusterError:
            lost = True
            raise
        finally:
            # After a lost scheduler, closing cancels the client's reconnection attempts,
            # which distributed logs as errors: that is expected here, so keep them quiet.
            with _quiet("distributed.client", "distributed.utils") if lost else _nothing():
                if futures and not lost:
                    with contextlib.suppress(Exception):
                        client.cancel([f for f in futures if not f.done()])
                if owned:
                    with contextlib.suppress(Exception):
                        client.close(timeout=10)

    def _check_workers(self, client: Any) -> None:
        try:
            builds = client.run(_worker_build, on_error="return")
        except Exception as e:
            raise ClusterError(f"cannot query the workers of {self.address}: {e}") from None
        local = build_info()
        for worker, build in builds.items():
            if isinstance(build, BaseException):
                raise ClusterError(
                    f"worker {worker} cannot run startlab ({type(build).__name__}: {build}); "
                    "install startlab in the workers' environment"
                )
            if build != local:
                raise ClusterError(
                    f"worker {worker} runs startlab build {build}, this process {local}: "
                    "install the same startlab on the workers"
                )

    def _record(self, future: Any, key: str) -> dict[str, Any]:
        status = future.status
        if status == "finished":
            record: dict[str, Any] = future.result()
            return record
        if status == "error":
            error = future.exception()
            name = type(error).__name__
            if name == "KilledWorker":
                return _crash_record(key, f"the run killed the workers that ran it ({error})")
            return _crash_record(key, f"{name}: {error}")
        raise ClusterError(
            f"lost the Dask scheduler at {self.address}: the runs in progress were {status}"
        )


@contextlib.contextmanager
def _quiet(*loggers: str) -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


class _Health:
    """Stops a Dask sweep whose scheduler is gone or that has had no worker for long."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.last = 0.0
        self.disconnected_since: float | None = None
        self.workerless_since: float | None = None

    def check(self) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        status = getattr(self.client, "status", "running")
        if status in ("closed", "closing", "failed"):
            raise ClusterError(f"lost the Dask scheduler (client {status})")
        if status != "running":
            self.disconnected_since = self.disconnected_since or now
            if now - self.disconnected_since > RECONNECT_TIMEOUT_S:
                raise ClusterError(
                    f"lost the Dask scheduler for {RECONNECT_TIMEOUT_S:.0f} s (client {status})"
                )
            return
        self.disconnected_since = None
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        except TypeError:  # older distributed: no n_workers
            workers = self.client.scheduler_info().get("workers", {})
        except Exception:
            return
        if workers:
            self.workerless_since = None
            return
        self.workerless_since = self.workerless_since or now
        if now - self.workerless_since > NO_WORKERS_TIMEOUT_S:
            raise ClusterError(f"the cluster has had no worker for {NO_WORKERS_TIMEOUT_S:.0f} s")
