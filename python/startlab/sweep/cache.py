"""The run cache: one small JSON file per run, named by the run's key, and, for the runs whose
time series are kept (the reproduction's figures), a run directory ``series/<key>/``.

A run's key is a content hash of its resolved scenario (canonical JSON) and of the simulator
build, so a finished run is never simulated again by the same build, whichever plan or sweep
directory asks for it, and a rebuilt simulator never reuses another build's results. Files
are written to a temporary name and renamed, so an interrupted sweep leaves only complete
files; a file that can't be read back (e.g. truncated by a power loss) counts as missing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
import shutil
import socket
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from startlab import _core
from startlab.result import Result

__all__ = ["FORMAT", "DirectoryLock", "RunCache", "build_info", "run_key"]

FORMAT = 1
"""Version of the run-file layout; part of every key."""


@functools.cache
def build_info() -> dict[str, str]:
    """What identifies the simulator that computes a run: the package version, the core
    version, and a hash of the compiled core (so a rebuilt core never reuses old runs)."""
    try:
        package = metadata.version("startlab")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        package = _core.version()
    digest = hashlib.sha256()
    core_file = getattr(_core, "__file__", None)
    if core_file:
        with Path(core_file).open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return {"package": package, "core": _core.version(), "build": digest.hexdigest()[:16]}


def run_key(scenario_json: str, world: str = "simulator") -> str:
    """The key of a run: 32 hex digits of SHA-256 over the canonical resolved scenario,
    :func:`build_info` and, for a kernel run, the world."""
    build = json.dumps(build_info(), sort_keys=True, separators=(",", ":"))
    where = "" if world == "simulator" else f"world={world}\n"
    text = f"startlab-run/{FORMAT}\n{build}\n{where}{scenario_json}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_KEY = re.compile(r"[0-9a-f]{32}")
_TEMPORARY = re.compile(r"\.(?P<key>[0-9a-f]{32})\.(?P<host>.+)\.(?P<pid>[0-9]+)\.tmp")


class RunCache:
    """A folder of run files ``<key>.json``.

    ``get`` returns a record only if it reads back whole and belongs to the key; ``put``
    writes atomically. Several sweeps may share one cache (``--cache``): identical keys give
    identical runs, and a rename replaces a file whole.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        """Where the run ``key`` is kept."""
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a run key: {key!r}")
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The record of ``key``, or ``None`` if there is none (or it is unreadable)."""
        try:
            record = json.loads(self.path(key).read_text("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != key:
            return None
        if record.get("format") != FORMAT or record.get("status") not in ("ok", "error"):
            return None
        return record

    def put(self, record: Mapping[str, Any]) -> Path:
        """Write a record atomically (temporary file, then rename) and return its path."""
        key = str(record["key"])
        path = self.path(key)
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{key}.{_host()}.{os.getpid()}.tmp"
        try:
            temporary.write_text(
                json.dumps(_json_safe(record), ensure_ascii=False, allow_nan=False) + "\n",
                encoding="utf-8",
            )
            temporary.replace(path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
        return path

    def series_path(self, key: str) -> Path:
        """Where the whole result of the run ``key`` is kept (a run directory), if it is."""
        self.path(key)  # checks the key
        return self.directory / "series" / key

    def has_series(self, key: str) -> bool:
        """Whether the run ``key`` has its run directory."""
        return (self.series_path(key) / "summary.json").is_file()

    def get_series(self, key: str) -> Result | None:
        """The whole result of the run ``key``, or ``None`` if it was not kept (or can't be
        read back, then it is removed)."""
        directory = self.series_path(key)
        if not directory.is_dir():
            return None
        try:
            return Result.load(directory)
        except (OSError, ValueError):
            shutil.rmtree(directory, ignore_errors=True)
            return None

    def put_series(self, key: str, result: Result) -> Path:
        """Keep the whole result of the run ``key`` (written to a temporary folder, then
        renamed); returns its directory."""
        directory = self.series_path(key)
        staging = directory.with_name(f".{key}.{_host()}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        result.write(staging, plots=False)
        try:
            staging.replace(directory)
        except OSError:  # written meanwhile by another process: the same run
            shutil.rmtree(staging, ignore_errors=True)
        return directory

    def keys(self) -> set[str]:
        """The keys that have a file (not checked)."""
        if not self.directory.is_dir():
            return set()
        return {p.stem for p in self.directory.glob("*.json") if _KEY.fullmatch(p.stem)}

    def remove_stale_temporaries(self) -> int:
        """Remove temporary files left by processes of this host that no longer exist (a
        sweep killed while writing); returns how many."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        for path in self.directory.glob(".*.tmp"):
            match = _TEMPORARY.fullmatch(path.name)
            if not match or match.group("host") != _host() or _alive(int(match.group("pid"))):
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        return removed


class DirectoryLock:
    """An exclusive lock on a folder (``.lock`` in it), held while a sweep writes there, so
    that two sweeps don't assemble results into the same folder at once. A no-op where
    ``fcntl`` is unavailable."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / ".lock"
        self._file: Any = None

    def acquire(self) -> bool:
        """Take the lock; ``False`` if another process holds it."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{_host()} {os.getpid()}\n")
        handle.flush()
        self._file = handle
        return True

    def holder(self) -> str:
        """``host pid`` of the process that holds (or last held) the lock, if known."""
        try:
            return self.path.read_text("utf-8").strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if not self.acquire():
            holder = self.holder()
            raise BlockingIOError(
                f"{self.path.parent}: in use by another sweep" + (f" ({holder})" if holder else "")
            )
        try:
            yield
        finally:
            self.release()


@functools.cache
def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
