"""Packed runs: many runs in one parquet file, for a store kept in git (data/).

A run file is a few KiB but fills a whole 4 KiB disk block however slim. A pack holds each run as one row:

    STORE/packs/<hash>.parquet   run_id, meta (the attention_lab JSON its run file held), and its tidy metric
                                 rows as three lists (step, metric, value); <hash>: of the run ids it holds

zstd then finds what runs share (their metadata's keys, the metric names), so a pack takes about a sixth of the
disk its runs' files did. Sweeps keep writing loose run files (runs/<id>.parquet); `python -m core pack` moves a
store's loose runs into a new pack, and `land` writes a line's runs into its store as one. A pack is written
whole before any loose file it holds is deleted, and a run stored both ways is read from its loose file, so a
kill at any point loses nothing. Deleting a packed run (prune) writes its pack again without it.
"""

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import runfile as rf
from . import schema

PACKS = "packs"
LISTS = ("step", "metric", "value")  # a run's tidy rows, one list each
RUNS_PER_GROUP = 512  # rows of one row group: a read of a few runs decodes only the groups holding them


def _parquets(folder: Path) -> list[Path]:
    """The folder's *.parquet files, temporary ones left out; none where it does not exist. os.scandir, not glob:
    a folder the reader may not open raises (PermissionError, named by the app), where glob would find nothing."""
    if not folder.is_dir():
        return []
    with os.scandir(folder) as entries:
        return sorted(folder / e.name for e in entries if e.name.endswith(".parquet") and not e.name.startswith("."))


def pack_paths(store) -> list[Path]:
    return _parquets(Path(store) / PACKS)


def holds_runs(store) -> bool:
    """Whether the folder has a runs/ or packs/ folder: a store, though every run in it may be packed."""
    return (Path(store) / "runs").is_dir() or (Path(store) / PACKS).is_dir()


def _check(arrow: pa.Schema) -> None:
    """ValueError naming what makes this schema no pack's."""
    meta = arrow.metadata or {}
    if rf.META_KEY not in meta or json.loads(meta[rf.META_KEY]).get("kind") != "pack":
        raise ValueError("no attention_lab pack metadata")
    schema.check_arrow(arrow, {"run_id": schema.TEXT, "meta": schema.TEXT})
    for name in LISTS:
        field = arrow.field(name) if name in arrow.names else None
        if field is None or not pa.types.is_list(field.type):
            raise ValueError(f"column {name}: must be a list")
        schema.check_arrow(pa.schema([pa.field(name, field.type.value_type)]), {name: schema.METRICS[name]})


@functools.lru_cache(maxsize=256)
def _ids(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    """The run ids a pack holds, read once per version of the file (its size and mtime are in the key)."""
    _check(pq.read_schema(path))
    return tuple(pq.read_table(path, columns=["run_id"]).column(0).to_pylist())


def packed(store) -> dict[str, tuple[Path, int, int]]:
    """{run_id: (its pack, the pack's size, mtime_ns)} of every packed run (the same dict while no pack changes: read
    it, never change it); a file in packs/ that is no readable pack is skipped with a warning naming it (once for
    each version of the folder), and a run two packs hold (a kill mid-rewrite) is read from the first."""
    versions = []
    for path in pack_paths(store):
        try:
            s = path.stat()
        except FileNotFoundError:  # rewritten by a concurrent prune: its runs are in the new file
            continue
        versions.append((str(path), s.st_size, s.st_mtime_ns))
    return _packed(tuple(versions))


@functools.lru_cache(maxsize=16)
def _packed(versions: tuple) -> dict[str, tuple[Path, int, int]]:
    out = {}
    for path, size, mtime_ns in versions:
        try:
            ids = _ids(path, size, mtime_ns)
        except FileNotFoundError:
            continue
        except Exception as err:  # noqa: BLE001 - any unreadable pack is skipped, never fatal
            warnings.warn(f"skipping {path}: not a readable attention-lab pack ({rf.reason(err)})", stacklevel=3)
            continue
        for rid in ids:
            out.setdefault(rid, (Path(path), size, mtime_ns))
    return out


@functools.lru_cache(maxsize=16)
def _meta_texts(path: str, size: int, mtime_ns: int) -> dict[str, str]:
    """{run_id: its metadata's JSON} of a pack, read once per version of the file: a run looked up alone (a sweep's
    has-it check, one member at a time) parses its own JSON, not its row group's."""
    t = pq.read_table(path, columns=["run_id", "meta"])
    return dict(zip(t["run_id"].to_pylist(), t["meta"].to_pylist()))


def _filter(run_ids) -> list | None:
    return None if run_ids is None else [("run_id", "in", sorted(set(run_ids)))]


def metas(path: Path, run_ids=None) -> dict[str, dict | Exception]:
    """{run_id: its metadata, checked as read_run_meta checks a run file's, or the error saying why it is not a
    readable run} of the pack's runs (those in run_ids, or all)."""
    s = Path(path).stat()
    texts = _meta_texts(str(path), s.st_size, s.st_mtime_ns)
    out = {}
    for rid in sorted(texts if run_ids is None else set(run_ids) & set(texts)):
        try:
            meta = json.loads(texts[rid])
            schema.check_run_meta(meta)
            if meta["run_id"] != rid:
                raise ValueError(f"run_id: {meta['run_id']!r} does not match its pack row's {rid!r}")
            out[rid] = meta
        except Exception as err:  # noqa: BLE001 - each row's own reason
            out[rid] = err
    return out


def metric_rows(path: Path, run_ids) -> pa.Table:
    """The tidy rows (run_id, step, metric, value) of these packed runs, in each run's stored order."""
    t = pq.read_table(path, columns=["run_id", *LISTS], filters=_filter(run_ids))
    parent = pc.list_parent_indices(t["step"])
    columns = {"run_id": pc.take(t["run_id"], parent), **{c: pc.list_flatten(t[c]) for c in LISTS}}
    return pa.table(columns)


def run_meta(store, run_id: str) -> dict:
    """A run's checked metadata: from its loose file where it has one, else from its pack. FileNotFoundError where
    the store holds no such run, ValueError (or the reader's error) where it cannot be read."""
    path = rf.run_path(store, run_id)
    if path.exists():
        return rf.read_run_meta(path)
    where = packed(store).get(run_id)
    if where is None:
        raise FileNotFoundError(f"no run {run_id} in {store}")
    got = metas(where[0], [run_id]).get(run_id, FileNotFoundError(f"no run {run_id} in {where[0]}"))
    if isinstance(got, Exception):
        raise got
    return got


def loose_paths(store) -> list[Path]:
    return _parquets(Path(store) / "runs")


def all_metas(store) -> Iterator[tuple[str, dict | Exception, str]]:
    """(run id, its metadata or why it cannot be read, where it is: its file, or its id in its pack) of every run:
    each loose run file, then each packed run without one."""
    loose = set()
    for path in loose_paths(store):
        loose.add(path.stem)
        try:
            yield path.stem, rf.read_run_meta(path), str(path)
        except Exception as err:  # noqa: BLE001
            yield path.stem, err, str(path)
    by_pack: dict[Path, list[str]] = {}
    for rid, (path, *_) in packed(store).items():
        if rid not in loose:
            by_pack.setdefault(path, []).append(rid)
    for path, ids in by_pack.items():
        for rid, meta in sorted(metas(path, ids).items()):
            yield rid, meta, f"{rid} in {path}"


# ---- writing -----------------------------------------------------------------------------
def build(paths: list[Path]) -> pa.Table:
    """A pack's rows of these run files (each checked as read_run_meta does; ValueError naming a file that is not
    a readable run), sorted by run id."""
    rows = []
    for path in sorted(paths, key=lambda p: p.name):
        rf.read_run_meta(path)  # raises for anything but a whole run
        f = pq.ParquetFile(path)
        t = f.read(columns=list(LISTS))
        rows.append((path.stem, f.schema_arrow.metadata[rf.META_KEY].decode(), t))
    if not rows:
        raise ValueError("no runs to pack")
    step_type, metric_type = rows[0][2].schema.field("step").type, pa.string()
    return pa.table(
        {
            "run_id": [r[0] for r in rows],
            "meta": [r[1] for r in rows],
            "step": pa.array([r[2]["step"].to_pylist() for r in rows], pa.list_(step_type)),
            "metric": pa.array([r[2]["metric"].cast(metric_type).to_pylist() for r in rows], pa.list_(metric_type)),
            "value": pa.array([r[2]["value"].cast(pa.float32()).to_pylist() for r in rows], pa.list_(pa.float32())),
        }
    )


def name_of(table: pa.Table) -> str:
    """<hash>.parquet: of the run ids it holds, so packing the same runs again writes the same file."""
    ids = "\n".join(table["run_id"].to_pylist())
    return f"{hashlib.sha256(ids.encode()).hexdigest()[:16]}.parquet"


def encode(table: pa.Table) -> bytes:
    """The pack file's bytes: zstd, the values split by byte stream as a run file's are, statistics on run_id
    alone (a read of a few runs skips the row groups that cannot hold them)."""
    table = table.replace_schema_metadata({rf.META_KEY: json.dumps({"format": rf.FORMAT, "kind": "pack"})})
    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        compression="zstd",
        compression_level=19,
        row_group_size=RUNS_PER_GROUP,
        use_dictionary=["metric.list.element"],
        use_byte_stream_split=["value.list.element"],
        write_statistics=["run_id"],
        store_schema=True,
    )
    return sink.getvalue().to_pybytes()


def write(store, table: pa.Table, data: bytes | None = None) -> Path:
    """Write a pack into the store (atomically; `data`: its encode() where the caller has it)."""
    path = Path(store) / PACKS / name_of(table)
    data = encode(table) if data is None else data
    rf.atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
    return path


def drop(store, run_ids) -> int:
    """Delete these runs from every pack holding them (two may, after a kill mid-rewrite): each such pack is written
    again without them (under the name of what it keeps) before the old file goes, or deleted where it keeps none.
    Returns how many of the runs were deleted."""
    gone, removed = set(run_ids), set()
    for path in pack_paths(store):
        try:
            s = path.stat()
            held = gone.intersection(_ids(str(path), s.st_size, s.st_mtime_ns))
        except Exception:  # noqa: BLE001 - an unreadable pack is no pack of the store (packed() names it)
            continue
        if not held:
            continue
        table = pq.read_table(path)
        keep = table.filter(pc.invert(pc.is_in(table["run_id"], value_set=pa.array(sorted(held)))))
        if keep.num_rows:
            write(store, keep.replace_schema_metadata(None))  # named by what it keeps: never this file's name
        path.unlink(missing_ok=True)
        removed |= held
    return len(removed)


def unpack(store, dest, run_ids) -> int:
    """Write these packed runs of `store` into `dest` as loose run files, as a sweep writes them (a store to change
    run by run). Returns how many were written."""
    where, n = packed(store), 0
    for path in sorted({where[rid][0] for rid in run_ids if rid in where}):
        ids = [rid for rid in run_ids if where.get(rid, (None,))[0] == path]
        rows, got = metric_rows(path, ids).to_pandas(), metas(path, ids)
        for rid in ids:
            if not isinstance(got[rid], Exception):
                rf.write_run_table(rf.run_path(dest, rid), rows[rows.run_id == rid], got[rid])
                n += 1
    return n


def pack(store) -> tuple[int, Path | None]:
    """Move the store's loose run files into one new pack: (how many, the pack). A file that is not a readable run
    stays where it is (every reader names it); a run some pack holds already is dropped from that pack first."""
    paths = []
    for path in loose_paths(store):
        try:
            rf.read_run_meta(path)
            paths.append(path)
        except Exception:  # noqa: BLE001 - left for the readers' own warning
            continue
    if not paths:
        return 0, None
    drop(store, [p.stem for p in paths])
    written = write(store, build(paths))
    for path in paths:
        path.unlink(missing_ok=True)
    return len(paths), written
