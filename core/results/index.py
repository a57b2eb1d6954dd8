"""The runs index: STORE/index/*.parquet, one row per run (load_runs' columns), so reading a 10,000-run
store's table opens a few files, not 10,000.

The index is a cache; the run files and packs (core.results.packs) stay the truth. Each row carries the size and
mtime of the file it was read from (a packed run's: its pack's), and a row counts only while that file still has
them: a run written, rewritten, packed or deleted since is read from its own file (and one that is not a readable
run is skipped with a warning, as before). So a store with a stale, partial, corrupt or no index reads the same,
only slower.

Writers never rewrite a segment: each stored job appends one (a new file, written atomically), and
`compact` merges segments into one, writing the merged file before deleting the ones it read, so a
concurrent reader or writer loses nothing. `python -m core index --store S` rebuilds it from the files
(after copying a store without its mtimes, e.g. a git clone).
"""

import itertools
import os
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from . import packs, schema
from . import runfile as rf

STAT = ["file_size", "file_mtime_ns"]  # the run file a row was read from
_counter = itertools.count()


def listing(store) -> dict[str, tuple[int, int]]:
    """{run_id: (size, mtime_ns)} of every run: of its loose file (temporary files of writers in flight excluded),
    else of its pack."""
    out = {rid: (size, mtime) for rid, (_, size, mtime) in packs.packed(store).items()}
    out.update(_loose(store))
    return out


def _loose(store) -> dict[str, tuple[int, int]]:
    folder = Path(store) / "runs"
    if not folder.is_dir():
        return {}
    out = {}
    with os.scandir(folder) as entries:
        for e in entries:
            if e.name.endswith(".parquet") and not e.name.startswith("."):
                try:
                    s = e.stat()
                except FileNotFoundError:  # deleted while listing
                    continue
                except OSError as err:  # a symlink loop, a dangling link, no permission: skipped, named
                    warnings.warn(f"skipping {folder / e.name}: cannot be read ({err.strerror})", stacklevel=2)
                    continue
                out[e.name[: -len(".parquet")]] = (s.st_size, s.st_mtime_ns)
    return out


def run_names(store) -> set[str]:
    """Every run id with an entry in runs/ or a readable pack, readable or not (listing() leaves out the files it
    cannot stat)."""
    folder, names = Path(store) / "runs", set(packs.packed(store))
    if not folder.is_dir():
        return names
    with os.scandir(folder) as entries:
        return names | {e.name[: -len(".parquet")] for e in entries if e.name.endswith(".parquet") and e.name[0] != "."}


def _segment_name() -> str:
    return f"runs-{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{os.getpid()}-{next(_counter)}"


def _rows(store, run_ids, files: dict) -> list[dict]:
    """load_runs' row of each run (read from its file's metadata, or its pack's), with the file's stat; bad files
    warned."""
    rows, folder, where, by_pack = [], os.path.join(store, "runs"), packs.packed(store), {}
    for rid in run_ids:
        path = os.path.join(folder, f"{rid}.parquet")  # os.path: pathlib's parsing was a tenth of a cold read
        if rid in where and files[rid] == where[rid][1:]:  # listed from its pack: it has no loose file
            by_pack.setdefault(where[rid][0], []).append(rid)
            continue
        try:
            rows.append({**rf.run_row(rf.read_run_meta(path)), **dict(zip(STAT, files[rid]))})
        except Exception as err:  # noqa: BLE001 - any unreadable file is skipped, never fatal
            warnings.warn(f"skipping {path}: not a readable attention-lab run ({rf.reason(err)})", stacklevel=3)
    for pack, ids in by_pack.items():
        rows += _packed_rows(pack, ids, files)
    return rows


def _packed_rows(pack, run_ids, files: dict) -> list[dict]:
    try:
        got = packs.metas(pack, run_ids)
    except Exception as err:  # noqa: BLE001 - rewritten or damaged since it was listed
        warnings.warn(f"skipping {pack}: not a readable attention-lab pack ({rf.reason(err)})", stacklevel=4)
        return []
    rows = []
    for rid, meta in sorted(got.items()):
        try:
            if isinstance(meta, Exception):
                raise meta
            rows.append({**rf.run_row(meta), **dict(zip(STAT, files[rid]))})
        except Exception as err:  # noqa: BLE001
            why = rf.reason(err)
            warnings.warn(f"skipping {rid} in {pack}: not a readable attention-lab run ({why})", stacklevel=4)
    return rows


def _stat_of(store, run_ids) -> dict[str, tuple[int, int]]:
    """listing() of just these runs (those whose file exists)."""
    out = {}
    for rid in run_ids:
        try:
            s = rf.run_path(store, rid).stat()
        except OSError:  # gone, or a link that cannot be followed
            continue
        out[rid] = (s.st_size, s.st_mtime_ns)
    return out


def append(store, run_ids) -> None:
    """Index these (just written) runs: one new segment."""
    files = _stat_of(store, run_ids)
    rows = _rows(store, [r for r in run_ids if r in files], files)
    if rows:
        rf.write_table(Path(store) / "index" / f"{_segment_name()}.parquet", pd.DataFrame(rows), {"kind": "index"})


def _segments(store) -> list[Path]:
    folder = Path(store) / "index"
    return sorted(folder.glob("runs-*.parquet")) if folder.is_dir() else []


def _read(paths) -> pd.DataFrame:
    frames = []
    for path in paths:
        try:
            rf.read_meta(path)
            frame = pd.read_parquet(path)
            schema.check_index(frame)  # a cache, but read as trusted as the run files are
            frames.append(frame)
        except FileNotFoundError:  # merged and deleted by a concurrent compact: its runs are read from their files
            continue
        except Exception as err:  # noqa: BLE001
            warnings.warn(f"skipping {path}: not a readable attention-lab index ({rf.reason(err)})", stacklevel=3)
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run_id", *STAT])


COLD = 50  # a read that found this many runs missing from the index leaves them indexed for the next one


def _leave(store, rows: pd.DataFrame) -> None:
    """Index rows a reader had to read from their files (a copied store is otherwise cold on every read)."""
    try:
        rf.write_table(Path(store) / "index" / f"{_segment_name()}.parquet", rows, {"kind": "index"})
    except OSError:  # a read-only store (a deployed app's data/) stays as it is: the read itself succeeded
        pass


def load_runs(store) -> pd.DataFrame:
    """One row per run file: from the index where it is current, else from the file (see the module doc)."""
    files = listing(store)
    known = _read(_segments(store)).drop_duplicates("run_id", keep="last")
    if not {*rf.RUN_COLUMNS, *STAT} <= set(known.columns):  # written before a column existed: read the files instead
        known = known.iloc[0:0].reindex(columns=["run_id", *STAT])
    known = known.drop(columns=list(schema.DROPPED), errors="ignore")  # nor one since dropped
    stat = pd.Series(list(zip(known.file_size, known.file_mtime_ns)), index=known.index, dtype=object)
    current = known[stat == known.run_id.map(files)]
    fresh = pd.DataFrame(_rows(store, sorted(set(files) - set(current.run_id)), files))
    if len(fresh) >= COLD:
        _leave(store, fresh)
    frames = [f for f in (current, fresh) if not f.empty]
    if not frames:
        return pd.DataFrame(columns=rf.RUN_COLUMNS)
    return pd.concat(frames, ignore_index=True).drop(columns=STAT).sort_values("run_id", ignore_index=True)


def compact(store, rebuild: bool = False) -> int:
    """Merge the segments into one (rebuild: read every run file instead); returns the runs indexed."""
    segments = _segments(store)
    files = listing(store)
    if rebuild:
        merged = pd.DataFrame(_rows(store, sorted(files), files))
    else:
        if len(segments) < 2:
            return len(_read(segments))
        merged = _read(segments).drop_duplicates("run_id", keep="last")
        merged = merged[merged.run_id.isin(files)]  # rows of deleted runs go
    if not merged.empty:
        rf.write_table(Path(store) / "index" / f"{_segment_name()}.parquet", merged, {"kind": "index"})
    for path in segments:
        path.unlink(missing_ok=True)
    return len(merged)
