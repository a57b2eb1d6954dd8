"""`python -m core report`: docs/results.md (every table and numeric claim, from a store; `results`) and
docs/reproduce.md (every command behind it, with the compute each sweep measured; `reproduce`; what is still to run,
`pending`, which `python -m core todo` prints too), both under the header in `common`. Generated, never edited by
hand: a test regenerates both from data/ and compares them with the committed files. It may import attention,
training, results, analysis and experiments; only the command line imports it."""

from pathlib import Path

from .common import DOCS
from .reproduce import reproduce
from .results import results


def write(store: Path, out: Path = DOCS) -> list[Path]:
    """Write docs/results.md and docs/reproduce.md for `store`; returns the paths written."""
    command = "python -m core report --store " + (
        "data" if store.resolve() == (DOCS.parent / "data").resolve() else str(store)
    )
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in (("results.md", results(store, command)), ("reproduce.md", reproduce(store, command))):
        path = out / name
        path.write_text(text)
        paths.append(path)
    return paths
