"""What refinement saves in training time, in a table and sentences: the report of
:func:`cnet_lib.images.studies.refinement_timing.time_refinement` (:func:`refinement_cost_table`) and its
comparison with the ideal (:func:`word_speedup`), beside the run's own record
(:func:`cnet_lib.images.studies.refinement_timing.recorded_timing`: the GPU's, for the shipped models)."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from ..images.studies.refinement_timing import log_spread
from ..runtime.device import gpu_words
from ..runtime.rich_text import Rich, join_rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.vocabulary import scheme_label

__all__ = ["word_speedup", "refinement_cost_table"]


def _log_sentence(histories: Mapping[str, Sequence[Mapping]]) -> str:
    """How much identical epochs varied in each training log (N_t with at least two epochs)."""
    parts = []
    for label, history in histories.items():
        groups = [f"{k} epochs at N_t = {n} from {lo:.1f} to {hi:.1f} s" for n, (lo, hi, k) in log_spread(history).items()
                  if k >= 2]
        if groups:
            parts.append(f"{label}: " + ", ".join(groups))
    if not parts:
        return ""
    return ("For comparison, the training logs' identical epochs took " + "; ".join(parts) + ". One run's log on a "
            "shared machine is not a fair clock, which is why the steps are timed in turn here.")


def word_speedup(timing: Mapping) -> Rich:
    """One sentence, as a paragraph, comparing the measured speed-up ``S`` with the ideal ``S*``: *falls short* when even
    the fastest round's ``S`` is below ``S*``, *exceeds* when even the slowest round's is above it (which a
    cost ``a + bN`` with ``a >= 0`` cannot give: timing noise, or a step growing faster than N_t), and
    *agrees within the spread of the rounds* otherwise."""
    s, (lo, hi), ideal = timing["speedup"], timing["speedup_range"], timing["ideal"]
    head = (f"Measured speed-up {s:.2f}× (single rounds {lo:.2f}–{hi:.2f}×) against the ideal {ideal:.2f}× "
            f"(efficiency {s / ideal:.2f}): ")
    return paragraphs([head + _speedup_verdict(lo, hi, ideal)])


def _speedup_verdict(lo: float, hi: float, ideal: float) -> str:
    if hi < ideal:
        return ("it falls short of the ideal, as the parts of a step that do not grow with N_t (stem, "
                       "stitches, head, data handling) predict.")
    if lo > ideal:
        return ("it exceeds the ideal, which a step cost a + b·N_t cannot explain: the timing was disturbed, "
                       "or a step grows faster than N_t on this machine.")
    return "the ideal lies within the spread of the rounds: no difference from it can be read from this timing."


def _machine_words(machine: Mapping) -> str:
    """``"an H100"`` or ``"a 2-core CPU"``: a record's machine (its ``environment``) as a reader names it."""
    if str(machine.get("device", "")).startswith("cuda") and machine.get("device_name"):
        return gpu_words(machine["device_name"])
    return f"a {machine['cpu_count']}-core CPU" if machine.get("cpu_count") else "the machine that trained it"


def _timed_where(timing: Mapping) -> str:
    threads = sorted(set((timing.get("threads") or {}).values()))
    if str(timing["device"]).startswith("cuda"):
        return f"this machine's GPU ({timing['device']})"
    return f"this machine's CPU ({'/'.join(map(str, threads))} threads)" if threads else "this machine's CPU"


def _record_sentence(timing: Mapping, recorded: Mapping) -> str:
    """The run's record beside this machine's timing: its training log's speed-up on the machine that trained it."""
    if list(recorded["n_steps_per_epoch"]) != list(timing["n_steps_per_epoch"]):
        return ""
    where = _machine_words(recorded.get("machine") or {})
    return (f"On {where}, where this model was trained, the median epochs of its training log give a speed-up of "
            f"{recorded['speedup']:.2f}× against the same ideal {recorded['ideal']:.2f}× (efficiency "
            f"{recorded['speedup'] / recorded['ideal']:.2f}).")


def refinement_cost_table(timing: Mapping, histories: Optional[Mapping[str, Sequence[Mapping]]] = None,
                           preset: Optional[str] = None, recorded: Optional[Mapping] = None) -> Rich:
    """The report of :func:`cnet_lib.images.studies.refinement_timing.time_refinement`: the schedule, a table of seconds per step at each N_t
    (median and range over the rounds), the sentence of :func:`word_speedup`; with the run's record
    (``recorded``, :func:`cnet_lib.images.studies.refinement_timing.recorded_timing`), a column of its training
    log's median epoch at each N_t on the machine that trained it and the speed-up they give; with the runs' training
    logs (``{label: history}``), how much their identical epochs varied
    (:func:`cnet_lib.images.studies.refinement_timing.log_spread`); under the
    ``smoke`` preset a warning that these timings say nothing about refinement at scale."""
    sched = timing["n_steps_per_epoch"]
    beside = recorded if recorded and list(recorded["n_steps_per_epoch"]) == list(sched) else None
    rows = [{"n": n, "median": timing["seconds_per_step"][n], "lo": min(v), "hi": max(v),
             "epochs": sched.count(n), "log": beside["seconds_per_epoch"][n] if beside else None}
            for n, v in timing["per_round"].items()]
    columns = [("N_t", "n", "{}"), ("epochs at this N_t", "epochs", "{}"),
               ("seconds per step here (median)", "median", "{:.4f}"),
               ("fastest round", "lo", "{:.4f}"), ("slowest round", "hi", "{:.4f}")]
    if beside:
        columns.append((f"seconds per epoch on {_machine_words(beside.get('machine') or {})} (its log, median)",
                        "log", "{:.2f}"))
    table = format_table(rows, columns, left=0)
    head = (f"{scheme_label(timing['scheme'])} {'-'.join(map(str, timing['channels']))}, N_t per epoch {sched} "
            f"(Σ N_t = {sum(sched)}); {timing['rounds']} rounds of {timing['steps']} step"
            f"{'s' if timing['steps'] != 1 else ''} at each N_t in turn, batch {timing['batch_size']}, on "
            f"{_timed_where(timing)}:")
    notes = [word_speedup(timing), _record_sentence(timing, beside) if beside else "", _log_sentence(histories or {})]
    if preset == "smoke":
        notes.append("(smoke preset: steps of a few milliseconds are dominated by overhead; these ratios say "
                     "nothing about refinement at scale.)")
    return join_rich([head, table, paragraphs([n for n in notes if n])])
