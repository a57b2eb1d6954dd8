"""Claims: a run being trained belongs to one sweep, so two sweeps on one store never train it twice.

STORE/claims/<run_id>.claim   "<pid> <start>": the sweep training that run, and when that process started
                              (/proc/<pid>/stat's start time), so a pid reused by an unrelated process after
                              the sweep died does not keep the claim alive. A claim whose holder is gone is
                              stale and is taken over.
STORE/claims/.lock            held (flock) while a claim is checked and taken, so two sweeps that find the
                              same stale claim cannot both take it.
"""

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path


def start_time(pid: int) -> str | None:
    """When the process started (clock ticks since boot, /proc/<pid>/stat field 22); None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # the fields after the command name, which may hold spaces


def alive(pid: int, start: str | None = None) -> bool:
    """Whether this process exists (another user's counts as alive) and, where `start` is given and the
    system says, is the one that started then."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        pass
    now = start_time(pid)
    return start is None or now is None or now == start


def _me() -> str:
    return f"{os.getpid()} {start_time(os.getpid()) or ''}".strip()


def _holder(path: Path) -> tuple[int, str | None]:
    try:
        pid, *start = path.read_text().split()
        return int(pid), (start[0] if start else None)  # a claim written before start times: pid alone
    except (OSError, ValueError):
        return 0, None  # gone or unreadable: nobody holds it


def held(path: Path) -> bool:
    return alive(*_holder(path))


def stale_claims(store) -> list[Path]:
    """The claims whose sweep is gone (killed mid-run): safe to delete."""
    return [p for p in Path(store).glob("claims/*.claim") if not held(p)]


def drop_stale(store) -> int:
    """Delete the stale claims, judged and deleted under the claims lock (so never a claim being taken); how
    many."""
    folder = Path(store) / "claims"
    if not folder.is_dir():
        return 0
    with _locked(folder):
        stale = stale_claims(store)
        for p in stale:
            p.unlink(missing_ok=True)
    return len(stale)


def claim_path(store, run_id: str) -> Path:
    return Path(store) / "claims" / f"{run_id}.claim"


@contextmanager
def _locked(folder: Path):
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def claim(store, run_id: str) -> bool:
    """Claim a run for this process. False when a live sweep holds it or it was finished meanwhile; a dead
    sweep's claim (or one whose pid now belongs to another process) is taken over. Atomic: under the
    store's claims lock, the claim file appears whole (os.link of a written temp file, exclusive as O_EXCL)."""
    path = claim_path(store, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent):
        if path.exists():
            pid, start = _holder(path)
            if pid == os.getpid():
                return True
            if alive(pid, start):
                return False
            path.unlink(missing_ok=True)  # the claimant died: its run was never finished
        if (Path(store) / "runs" / f"{run_id}.parquet").exists():  # finished by another sweep, since we looked
            return False
        # written whole, then linked into place: a reader outside the lock never sees an empty claim (which
        # would read as nobody's, and be deleted as stale by another sweep starting)
        tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
        tmp.write_text(_me())
        try:
            os.link(tmp, path)  # atomic and exclusive, as O_EXCL
        finally:
            tmp.unlink(missing_ok=True)
        return True


def release(store, run_id: str) -> None:
    path = claim_path(store, run_id)
    if _holder(path)[0] == os.getpid():
        path.unlink(missing_ok=True)
