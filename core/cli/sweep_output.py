"""What `python -m core sweep` prints: the dry run's outlook, the progress bar's criterion counts, the outcome of
the cells it swept and the sweep's wall time against the matmul peak measured here."""

from ..analysis import findings
from ..experiments import sweep
from ..training.device import device_name


def print_outlook(store, jobs) -> None:
    """What the sweep would train and from where (core.experiments.outlook), one row per job, then the totals."""
    from ..experiments.outlook import outlook

    table = outlook(store, jobs)
    print(table.to_string(index=False))
    n = table[["taken up", "from a checkpoint", "from step 0"]].sum()
    print(
        f"would train {n.sum()} of {table.members.sum()} members ({n['taken up']} taken up from a shorter cap's "
        f"end states, {n['from a checkpoint']} from a checkpoint, {n['from step 0']} from step 0) for at most "
        f"{table['member-steps'].sum():,} member-steps; nothing was trained or written (--dry-run)"
    )


def criterion_postfix(members: dict) -> str:
    """Members still training, solved, censored at the cap, stopped with an lr that cannot be chosen."""
    return (
        f"training {members['training']} · solved {members['solved']} · censored {members['cap']} · "
        f"lr dropped {members['pruned']}" + (f" · diverged {members['diverged']}" if members["diverged"] else "")
    )


def print_outcome(args, jobs, runs, counts) -> None:
    """The swept cells at their best lr, and what was trained, skipped or left to another sweep."""
    wanted = {rid for j in jobs for rid in j.run_ids().values()}
    table = sweep.summary_table(findings.at_best_lr(runs[runs.run_id.isin(wanted)]))
    cols = [
        "task",
        "attention",
        "lr",
        "seeds",
        "solved",
        "test_acc",
        "test_acc_std",
        "test_loss",
        "params_attention",
        "seconds_per_member_step",
    ]
    print(
        table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}") if not table.empty else "no finished runs"
    )
    stops = (
        f"; {counts['solved']} solved, {counts['cap']} censored at the cap, {counts['pruned']} stopped with an "
        "lr that could not be chosen"
        if "solved" in counts
        else ""
    )
    carried = counts.get("carried", 0)  # the same runs, stored here without a step taken
    print(
        f"trained {counts['trained']} runs ({counts['diverged']} diverged{stops}), skipped {counts['skipped']} "
        "already stored"
        + (f", {counts['longer']} held at a higher cap" if counts["longer"] else "")
        + (f", {carried} carried over (stopped before a shorter cap, or from --carry-from)" if carried else "")
        + (f", {counts['claimed']} being trained by another sweep" if counts["claimed"] else "")
    )


def print_utilisation(r, precision: str, threads: int, device) -> None:
    """The sweep's wall time and FLOP/s against the matmul peak measured on this machine."""
    minutes, seconds = divmod(round(r.seconds), 60)
    if r.get("cancelled"):  # the jobs in flight stored nothing: their FLOPs are not known
        print(f"{minutes} min {seconds} s wall ({precision}) until the cancel; {r.gflop:.1f} GFLOP in the runs stored")
        return
    where = f"on the {device_name(device)}" if str(device).startswith("cuda") else f"at {threads} threads"
    print(
        f"{minutes} min {seconds} s wall ({precision}), {r.gflops:.1f} GFLOP/s = {r.utilisation:.0%} "
        f"of the {precision} matmul peak measured here ({r.peak_gflops:.0f} GFLOP/s {where}); "
        f"training steps alone: {r.step_utilisation:.0%} of it; at that peak its FLOPs would still take "
        f"{r.gflop / r.peak_gflops / 60:.1f} min"
    )
