"""Which stores the app may read and write: named, never pathed. No streamlit, no torch.

The app's visitors are untrusted, so a URL or a widget names a store, and the name is resolved here:
- `data`: the bundled results beside app.py (read-only for the app);
- any direct child directory of the stores root, `ATTENTION_LAB_STORES` (default `stores/` beside
  app.py, git-ignored), whose name matches NAME and which resolves inside the root (a symlink out
  is refused).
Anything else resolves to None, and the caller says one generic sentence that names no path and does
not tell a missing store from a forbidden one. The command line takes any directory: its user owns
the machine.
"""

import os
import re
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_NAME = "data"
BUNDLED = ROOT / BUNDLED_NAME
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
NAME_RULE = "1-64 letters, digits, '_' or '-'"
UNAVAILABLE = "That store is not available here; showing the bundled results."


def stores_root() -> Path:
    return Path(os.environ.get("ATTENTION_LAB_STORES") or ROOT / "stores")


def inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop, an unreadable parent
        return False


def resolve(name) -> Path | None:
    """The directory a store name stands for, or None (unknown, badly formed or refused: never said which)."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        return None
    if name == BUNDLED_NAME:
        return BUNDLED
    root = stores_root()
    path = root / name
    if not inside(path, root) or path.resolve().parent != root.resolve() or not path.is_dir():
        return None
    return path


def available() -> list[str]:
    """`data` first, then the stores under the root, sorted."""
    root = stores_root()
    try:
        children = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    except OSError:
        children = []
    return [BUNDLED_NAME, *(n for n in children if n != BUNDLED_NAME and resolve(n) is not None)]


def writable(name: str) -> Path:
    """Where the Train page may write a store of this name: a direct child of the root, never `data`.
    Raises a one-line ValueError naming the field and the rule."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"store name: must be {NAME_RULE}, got {name!r}")
    if name == BUNDLED_NAME:
        raise ValueError("store name: `data` holds the bundled results; pick another name")
    root = stores_root()
    path = root / name
    if resolve(name) is None and os.path.lexists(path):  # lexists: a symlink loop or dangling link counts too
        # the same sentence for every entry the sidebar does not list (file, link out, loop, hidden directory),
        # and the one a name already taken gets anywhere: it says no more than that the name is in use
        raise ValueError(f"store name: {name!r} is taken; pick another name")
    return path


def is_read_only() -> bool:
    """Streamlit Community Cloud, an explicit opt-out, or a stores root this process cannot write.

    os.access says yes to root whatever the modes, so the root's write bits are read directly (an
    operator's `chmod a-w stores` holds for a root server too), then a file is created as a probe (a
    read-only mount)."""
    cloud = os.environ.get("HOME") == "/home/appuser" or str(ROOT).startswith("/mount/src")
    if cloud or os.environ.get("ATTENTION_LAB_READONLY") == "1":
        return True
    root = stores_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not root.stat().st_mode & 0o222:
            return True
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe-"):
            pass
    except OSError:
        return True
    return False
