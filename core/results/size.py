"""What a store takes as a clone of the repository holds it: its files' bytes, and its disk in whole blocks.

The bundled store stays within LIMIT on both counts (tests/test_bundled.py), for the app's checkout on Community
Cloud. A run file is a few KiB but fills a whole 4 KiB block however slim, so on disk the number of runs, not their
bytes, is what grows: docs/reproduce.md states both numbers (caches aside, so a clone reads the same), and `land`
refuses a line that would pass the limit with everything data/ holds counted."""

from pathlib import Path

LIMIT = 30 * 10**6  # bytes, of files and on disk
BLOCK = 4096  # the disk block a file's last bytes still fill
CACHES = ("index", "claims", "scratch")  # git-ignored working files, which a clone rebuilds or never has


def on_disk(n: int) -> int:
    """The bytes a file of n bytes takes on disk: whole BLOCKs."""
    return -(-n // BLOCK) * BLOCK


def size(store, caches: bool = False) -> tuple[int, int]:
    """(bytes of its files, bytes on disk in whole BLOCKs) of a store, its temporary files left out and its CACHES
    too unless `caches`: the limit counts them where they are (an app that reads data/ builds its index there)."""
    root = Path(store)
    files = [
        p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".") and (caches or p.relative_to(root).parts[0] not in CACHES)
    ]
    return sum(files), sum(map(on_disk, files))
