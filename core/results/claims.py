"""Claims: a run being trained belongs to one sweep, so two sweeps on one store never train it twice.

STORE/claims/<run_id>.claim   the pid of the sweep training that run; a dead pid's claim is stale
"""

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        pass
    return True


def stale_claims(store) -> list[Path]:
    """The claims whose sweep is gone (killed mid-run): safe to delete."""
    return [p for p in Path(store).glob("claims/*.claim") if not alive(_claim_pid(p))]


def claim_path(store, run_id: str) -> Path:
    return Path(store) / "claims" / f"{run_id}.claim"


def _claim_pid(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0  # gone or unreadable: nobody holds it


def claim(store, run_id: str) -> bool:
    """Claim a run for this process: a file holding the pid, linked into place (atomic, and it fails
    when the name exists). False when a live process holds it; a dead process's claim is taken over."""
    path = claim_path(store, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.write_text(str(os.getpid()))
    try:
        for _ in range(2):
            try:
                os.link(tmp, path)
            except FileExistsError:
                pid = _claim_pid(path)
                if pid == os.getpid() or alive(pid):
                    return pid == os.getpid()
                path.unlink(missing_ok=True)  # the claimant died: its run was never finished
                continue
            finished = Path(store) / "runs" / f"{run_id}.parquet"  # by another sweep, since we looked
            if finished.exists():
                release(store, run_id)
                return False
            return True
        return False
    finally:
        tmp.unlink(missing_ok=True)


def release(store, run_id: str) -> None:
    path = claim_path(store, run_id)
    if _claim_pid(path) == os.getpid():
        path.unlink(missing_ok=True)
