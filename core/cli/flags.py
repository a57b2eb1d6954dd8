"""Command-line flag types: every bad value is one line that names the flag and what it allows (exit 2)."""

import argparse
import math
import os
import re
import tempfile
from pathlib import Path

from ..training.config import LR_GRID


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        self.exit(2, f"error: {message}\n")


def names(flag: str, allowed: dict):
    def parse(text: str) -> list[str]:
        items = list(allowed) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(bad) or repr(text)}; allowed: all, {', '.join(allowed)}"
            )
        return items

    parse.__name__ = flag  # argparse names the flag in its message
    return parse


def choice(flag: str, allowed):
    def parse(text: str) -> str:
        if text not in allowed:
            raise argparse.ArgumentTypeError(f"unknown {text!r}; allowed: {', '.join(allowed)}")
        return text

    parse.__name__ = flag
    return parse


def lr_list(text: str) -> list[float]:
    """`--lr 3e-4,1e-3` or `--lr grid` (LR_GRID); every value finite and positive."""
    if text.strip() == "grid":
        return list(LR_GRID)
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        values = []
    if not values or not all(0 < v < math.inf for v in values):
        raise argparse.ArgumentTypeError(
            f"must be 'grid' ({','.join(f'{v:g}' for v in LR_GRID)}) or a comma list of finite positive numbers, "
            f"got {text!r}"
        )
    return values


lr_list.__name__ = "lr"


def bounded_int(flag: str, most: int, least: int = 1):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be an integer from {least} to {most}, got {text!r}")
        return value

    parse.__name__ = flag
    return parse


def part(text: str) -> tuple[int, int]:
    """`--part K/N`: the K-th of N parts, 1 <= K <= N."""
    k, _, n = text.partition("/")
    try:
        k, n = int(k), int(n)
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"must be K/N with 1 <= K <= N (2/5, say), got {text!r}")
    return k, n


part.__name__ = "part"


def positive_float(flag: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value

    parse.__name__ = flag
    return parse


# The commands' default store: a direct child of the app's stores root (core.results.stores), so a store made
# with the defaults is in the app's Store list as "local".
DEFAULT_STORE = "stores/local"
NAME_MAX = 255  # bytes in one path component on Linux filesystems
MAX_WORKERS = 256  # worker processes; more would only thrash (each holds a model and a thread)
MAX_STORE_RUNS = 100_000  # the synthetic store of `bench`: 10x the 10,000 runs it is built for


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a directory, got ''")
    long = next((part for part in Path(text).parts if len(part.encode()) > NAME_MAX), None)
    if long is not None:
        raise argparse.ArgumentTypeError(f"a path component is {len(long.encode())} bytes, over {NAME_MAX}")
    return Path(text)


def read_store(text: str) -> str:
    """A store to read: a path a filesystem can hold (whether it is a store, the command says)."""
    return str(_path(text))


read_store.__name__ = "store"


def store_dir(text: str) -> str:
    """A directory to write into: not empty, not an existing file, and creatable (checked before training, by
    creating and removing a directory where it would go, so /proc or a read-only mount fail here)."""
    path = _path(text)
    if os.path.lexists(path) and not path.exists():  # a dangling or self-referring symlink: mkdir would fail later
        raise argparse.ArgumentTypeError(f"{text!r} is a symlink that leads nowhere")
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if existing.exists() and not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory ({existing} is a file)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=existing))
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot create or write {text!r} ({err.strerror} in {existing})") from None
    return text


store_dir.__name__ = "store"


def cache_dir(text: str) -> str:
    """store_dir's rules, for --cache."""
    return store_dir(text)


cache_dir.__name__ = "cache"


def device(text: str) -> str:
    """cpu, or cuda where torch sees a GPU (checked here, not as an assertion deep in training)."""
    if text not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"unknown {text!r}; allowed: cpu, cuda")
    if text == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError("cuda: no CUDA GPU is available here; allowed: cpu")
    return text


device.__name__ = "device"


def ray_address(text: str) -> str:
    from ..experiments.cluster import parse_address

    try:
        return parse_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


ray_address.__name__ = "ray"


def flag_error(parser: Parser, err: ValueError):
    """Config errors say 'd_model: ...'; the user typed --d-model."""
    msg = re.sub(r"^(\w+):", lambda m: f"--{m.group(1).replace('_', '-')}:", str(err))
    parser.error(msg)


def add_store(p: argparse.ArgumentParser, writes: bool = True) -> None:
    """--store: one this command writes (created if absent) or only reads (it must exist)."""
    kind, what = (store_dir, "store directory") if writes else (read_store, "store")
    p.add_argument("--store", type=kind, default=DEFAULT_STORE, help=f"{what} (default {DEFAULT_STORE}/)")


def add_workers(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--workers", type=bounded_int("workers", MAX_WORKERS), default=None, help=help)


def add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", type=device, default=None, help="cpu or cuda (default: cuda when present)")
