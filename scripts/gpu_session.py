"""The GPU session's driver (run by scripts/gpu_session.sh): what one GPU command of at most 10 minutes does with the
`gpu` preset, resumable across commands (issue 45).

It trains the recipe the session targets (``--recipe auto``: the next recipe of the `gpu` preset,
``image_presets.NEXT_GPU_RECIPE``, put in force in this process: :func:`session_state.recipe_in_force`) unit by unit,
one training seed of one run at a time (:mod:`session_state`), and only the units no earlier command finished: the
records of the state folder (``gpu_state/``, which ``scripts/session_files.py accept`` writes and the next command
carries; its ``seed0.json`` names seed 0's folders that accept holds without carrying them) and of the shipped models
say which.  Stages, in order (each skipped, and said so, when the time left is
less than its estimate; the estimate is what the same run took before, in the records, else :data:`ESTIMATE_S`):

    throughput  (GPU_SESSION_THROUGHPUT=1) benchmarks/bench_gpu_throughput.py: today's SGD step against the
                candidates for a faster one, first, on an idle GPU
    seed k      for k = 0, 1, 2: each main run (rk4_refined, euler_fixed) of seed k that is missing, trained, its
                weights stored as they ship (float16, evaluated again: cnet_lib.images.runs.shipping_copy), then the
                seed's studies from those weights: sweeps, robustness, adaptive steps (together when both runs
                trained now; the numbers are each model's own either way)
    ship        after seed 0: its main runs' shipped folders (the library's own writer, with the pair's studies),
                one tar each, shipped-<preset>-<run>.tar (at most 16 MiB: a 64-128-256 model is 14.7 MB in float16)
    controls k  for k = 0, 1, 2: each control run (rk4_fixed, euler_refined) of seed k that is missing, trained,
                stored so and swept
    checks      when the preset in force is the one trained (no other recipe) and time and the return limits allow:
                the cuda tests, the chapters (image chapters on CUDA), StepRunner against make_graphed_callables,
                the pendulum's batched training and the live apps, as a session with nothing to train does

After every stage every record known (the earlier commands' and this one's) is written to
``OUT/seeds-<preset>.json`` and to the work folder, so a stop at the deadline keeps what finished; a rerun on the
same (warm) machine reads the work folder too (a half-trained run continues from its last epoch there).  With
nothing missing (or ``--train never``) the session only runs the checks.

Measured (the H100 training session of 2026-11-27, 16-32-64, the book's page On a GPU): a seed of both main runs took
128-147 s (training 86-88 s, sweeps 21-24 s, robustness 15-17 s).  The 64-128-256 recipe's training alone was measured
by the recipe probe on an H200 (195.5 s RK4 refined, 78.0 s Euler, 50,000 images; ``ESTIMATE_S`` scales them to the
pack's 45,000); its studies at that width are not measured yet (``ESTIMATE_S`` states a guess, replaced by each
run's own seconds once a command has recorded them).

    python scripts/gpu_session.py --out OUT [--work DIR] [--state DIR] [--shipped DIR] [--deadline-s 540] [--recipe auto]
        [--train auto|always|never] [--seeds 0 1 2] [--throughput] [--no-notebooks] [--stop-after-units N] [--dry-run]

Writes into OUT (at most 8 files, each at most 16 MiB: the GPU machine's return limits, checked): gpu_session.json
(every stage, every unit's numbers, the machine), seeds-<preset>.json, shipped-<preset>-<run>.tar (seed 0's main
runs, when trained now), throughput.json, and from the checks chapters.json, cuda_tests.txt, live_apps.json,
pendulum_batched.json (gpu_session.log is the shell script's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import session_state as SS  # noqa: E402
from session_files import MAX_FILES, check_out_limits, t4_estimate  # noqa: E402

ESTIMATE_S = {
    "smoke": {"rk4_refined": 20, "euler_fixed": 20, "rk4_fixed": 15, "euler_refined": 15},
    # the H100 session of 2026-11-27: a seed of both runs with its studies 128-147 s
    "16-32-64": {"rk4_refined": 80, "euler_fixed": 70, "rk4_fixed": 60, "euler_refined": 50},
    # training: the H200 probe's seconds x 45/50 (RK4 refined 176 s, Euler 70 s; RK4 at N_t = 4 for 40 epochs from its
    # 6.9 s an epoch, 248 s; Euler refined about 60 s), plus an unmeasured allowance for the studies at this width
    # (main runs 90 s: sweep, robustness, adaptive; controls 40 s: sweep)
    "64-128-256": {"rk4_refined": 266, "euler_fixed": 160, "rk4_fixed": 288, "euler_refined": 100},
}
"""Seconds a unit is expected to take (training, the shipping copy and its studies) until the records hold what the
same run took; keyed by the recipe (the preset's name for one without recipes)."""
SHIP_ESTIMATE_S = 30
REUSE_PLAN = ("cuda_tests", "chapters_pendulum", "chapters_images", "graphed callables", "pendulum batched", "live apps")
"""The stages of the checks (a session with nothing to train runs only these)."""
CHECK_FILES = ("chapters.json", "cuda_tests.txt", "live_apps.json", "pendulum_batched.json")
PENDULUM_BATCHED_LIMIT_S = 150
"""At most this long for the pendulum's batched training against one model after another (issue 31: its GPU time)."""
LIVE_APPS_LIMIT_S = 150
"""At most this long for the live-app timings (the H100 session stopped them at 45 s, in the pendulum app)."""
THROUGHPUT_LIMIT_S = 150
"""At most this long for the throughput candidates (benchmarks/bench_gpu_throughput.py)."""
PENDULUM_CHAPTERS = ("how_to_use", "pendulum_integrators", "resnet_euler")
DRY_CHAPTERS = {"pendulum": ["how_to_use"], "images": ["manifestation_invariance"]}
DESCRIPTION = ("all 45,000 training images of the project's CIFAR-10 copy, read from its WebP pack (quality 90, "
               "`python -m cnet_lib pack ../shared/data-large shared_pack`); accuracies on its 5,000 held-out "
               "validation images; training seed 0; weights stored in {weights} and every study computed from them")


class Session:
    """The session's state: where it writes, its deadline, its stages, what it knows, and the summary written after
    each stage."""

    def __init__(self, args):
        self.t0 = time.monotonic()
        self.out, self.work = Path(args.out), Path(args.work)
        self.state = Path(args.state) if args.state else None
        self.shipped = Path(args.shipped) if args.shipped else None
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.dry, self.deadline = args.dry_run, args.deadline_s
        self.preset = "smoke" if self.dry else "gpu"
        self.device = "cpu" if self.dry else "cuda"
        self.seeds = list(args.seeds)
        self.train = args.train
        self.notebooks = not args.no_notebooks
        self.stop_after = args.stop_after_units
        self.recipe = SS.target_recipe(self.preset, args.recipe)
        self.summary = {"preset": self.preset, "recipe": self.recipe, "dry_run": self.dry, "stages": {}, "seeds": {},
                        "control_seeds": {}, "units": {}}
        self.background = {}
        self.records: dict = {}  # seed -> record: every unit known done
        self.copies: dict = {}  # (seed, run) -> StudyRun trained now, as it ships
        self.folders: dict = {}  # run -> seed 0's shipped folder (this command's, the state's or the book's)
        self.held: dict = {}  # run -> seed 0's folder that accept holds, carried or not (session_state.HELD)
        self.trained = 0
        self.identity: dict = {}

    def left(self) -> float:
        return self.deadline - (time.monotonic() - self.t0)

    def stopped(self) -> str:
        """Why no further unit starts (a rehearsed deadline: ``--stop-after-units``), or ``""``."""
        if self.stop_after is not None and self.trained >= self.stop_after:
            return f"stopped after {self.trained} trained units (--stop-after-units: a deadline rehearsed)"
        return ""

    def stage(self, name: str, estimate_s: float, fn) -> bool:
        """Run ``fn()`` as stage ``name`` unless less than ``estimate_s`` seconds are left; record it."""
        if self.left() < estimate_s:
            self.summary["stages"][name] = {"status": f"skipped: {self.left():.0f} s left, it needs about {estimate_s:.0f} s"}
            print(f"=== {name}: skipped (time)", flush=True)
            self.write_summary()
            return False
        print(f"=== {name} ({self.left():.0f} s left)", flush=True)
        t = time.monotonic()
        try:
            fn()
            status = "passed"
        except Exception as err:  # a failed stage is reported; the session goes on with the next one
            status = f"FAILED: {type(err).__name__}: {str(err)[-600:]}"
        self.summary["stages"][name] = {"status": status, "seconds": round(time.monotonic() - t, 1)}
        print(f"=== {name}: {status} ({time.monotonic() - t:.1f} s)", flush=True)
        self.write_summary()
        return status == "passed"

    def start(self, name: str, command: list, env: dict | None = None) -> None:
        """Start a background job; its output goes to ``work/<name>.txt``."""
        log = open(self.work / f"{name}.txt", "w")
        self.background[name] = (subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                                   env={**os.environ, **(env or {})}, start_new_session=True),
                                 time.monotonic(), log)
        print(f"=== {name}: started in the background", flush=True)

    def join(self, name: str) -> int:
        """Wait for a background job until the deadline (then stop it); record its status and seconds."""
        proc, started, log = self.background[name]
        try:
            rc = proc.wait(timeout=max(self.left(), 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the job and its children (a chapter's kernel) together
            rc = proc.wait()
            self.summary["stages"][name] = {"status": "stopped at the deadline", "seconds": round(time.monotonic() - started, 1)}
        else:
            self.summary["stages"][name] = {"status": "passed" if rc == 0 else f"FAILED: exit status {rc}",
                                            "seconds": round(time.monotonic() - started, 1)}
        log.close()
        self.write_summary()
        return rc

    def write_summary(self) -> None:
        self.summary["seconds"] = round(time.monotonic() - self.t0, 1)
        (self.out / "gpu_session.json").write_text(json.dumps(self.summary, indent=1, default=str))


def settings_for(s: Session):
    from cnet_lib.runtime.settings import Settings

    return Settings.from_environment(preset=s.preset, runs_dir=s.work / "runs", device=s.device)


# --------------------------------------------------------------------------- what is known, what is missing
def know(s: Session) -> list:
    """Read what earlier commands finished (the book's shipped models, the state folder, this machine's work folder)
    into ``s.records`` and ``s.folders``; the units still to train."""
    from cnet_lib.images.runs.shipped import SHIPPED

    s.identity = SS.identities(s.preset)
    shipped = s.shipped or SHIPPED
    places = [p for p in (s.work / "shipped", s.state, shipped) if p is not None]
    known = [*SS.shipped_records(s.preset, s.identity, shipped),
             *(SS.read_records(s.state / SS.records_name(s.preset), s.identity) if s.state else []),
             *SS.read_records(s.work / SS.records_name(s.preset), s.identity)]
    units = SS.plan(s.preset, s.seeds)
    if s.train == "always":
        known = []
        places = [s.work / "shipped"]
    s.records = SS.by_seed(known)
    s.folders = SS.seed0_folders(s.preset, s.identity, *places)
    s.held = SS.held_runs(s.state, s.identity) if s.train != "always" else {}  # kept by accept, here or not
    missing = SS.missing_units(units, s.records, {**s.held, **s.folders})
    s.summary["identity"] = s.identity
    s.summary["units"] = {"seeds": s.seeds, "planned": [u.name for u in units], "missing_at_start": [u.name for u in missing],
                          "trained": [], "seed0_folders": {r: str(f) for r, f in s.folders.items()},
                          "seed0_held_by_accept": sorted(s.held)}
    return missing


def estimate(s: Session, run: str) -> float:
    """Seconds a unit of ``run`` is expected to take: the longest the records hold for it, else :data:`ESTIMATE_S`."""
    seen = [rec["runs"][run].get("unit_seconds") for rec in s.records.values() if run in rec.get("runs", {})]
    seen = [x for x in seen if isinstance(x, (int, float))]
    table = ESTIMATE_S.get(s.recipe, ESTIMATE_S.get(s.preset, ESTIMATE_S["64-128-256"]))  # a recipe not yet timed: the widest's
    return max(seen) if seen else table[run]


def save_records(s: Session, new: dict) -> None:
    """Join ``new`` into what is known and write every record to OUT and to the work folder."""
    from cnet_lib.runtime.device import environment

    s.records = SS.by_seed([*s.records.values(), new])
    for folder in (s.out, s.work):
        SS.write_records(folder / SS.records_name(s.preset), s.records.values(), s.preset, s.identity,
                         environment(s.device))


# --------------------------------------------------------------------------- the units
def train_unit(s: Session, unit: SS.Unit):
    """Train ``unit`` (or load it from this machine's work folder) and store it as it ships."""
    from cnet_lib.images import trained_runs
    from cnet_lib.images.runs.shipping_copy import shipping_copy

    t = time.monotonic()
    run = trained_runs(settings_for(s), runs=[unit.run], use_shipped=False, verbose=True, seed=unit.seed)[unit.run]
    copy = shipping_copy(run, SS.WEIGHTS)
    s.copies[(unit.seed, unit.run)] = copy
    s.trained += 1
    s.summary["units"]["trained"].append(unit.name)
    return copy, time.monotonic() - t


def study_units(s: Session, copies: dict, main: bool, seconds: dict) -> dict:
    """The studies of ``copies`` (run -> StudyRun of one seed, as they ship): sweeps, and for main runs the robustness
    and adaptive-step studies; their record, with each unit's seconds (``seconds``: run -> training seconds, the
    studies' shared out)."""
    from cnet_lib.images import robustness_runs, seed_record, sweep_runs
    from cnet_lib.images.runs.image_presets import robustness_grid, sweep_grid
    from cnet_lib.images.studies.adaptive_cached import adaptive_runs
    from cnet_lib.images.studies.robustness_cached import robustness_cache
    from cnet_lib.images.studies.sweep_cached import sweep_cache

    t = time.monotonic()
    sweeps = sweep_runs(copies, verbose=True)
    study = robustness_runs(copies, verbose=True) if main else None
    adaptive = adaptive_runs(copies, verbose=True) if main else None
    record = seed_record(copies, sweeps, study, adaptive)
    share = (time.monotonic() - t) / len(copies)
    for name, copy in copies.items():  # a run resumed or loaded on a warm machine counts its whole training
        trained = sum(h["train_seconds"] + h.get("eval_seconds", 0.0) for h in copy.history)
        record["runs"][name]["unit_seconds"] = round(max(seconds[name], trained) + share, 1)
    dev = next(iter(copies.values())).settings.device
    study_seconds = {f"sweep {n}": json.loads(sweep_cache(r, sweep_grid(s.preset), dev)[0].read_text()).get("seconds")
                     for n, r in copies.items()}
    if main:
        study_seconds["robustness"] = json.loads(robustness_cache(copies, robustness_grid(s.preset), dev)[0]
                                                 .read_text()).get("seconds")
        study_seconds["adaptive"] = adaptive["seconds"]
    where = s.summary["seeds" if main else "control_seeds"].setdefault(str(record["seed"]), {
        "runs": {}, "study_seconds": {}, "history": {}})
    where["runs"].update(record["runs"])
    where["study_seconds"].update(study_seconds)
    where["history"].update({n: r.history for n, r in copies.items()})
    return record


def seed_stage(s: Session, seed: int, units: list) -> None:
    """Train the missing units of one seed (each when its estimate fits the time left), then study them together."""
    trained, seconds = {}, {}
    for unit in units:
        why = s.stopped()
        if why or s.left() < estimate(s, unit.run):
            s.summary["stages"][f"{unit.name}: not started"] = {
                "status": f"skipped: {why or f'{s.left():.0f} s left, it needs about {estimate(s, unit.run):.0f} s'}"}
            continue
        copy, took = train_unit(s, unit)
        trained[unit.run], seconds[unit.run] = copy, took
    if trained:
        save_records(s, study_units(s, trained, units[0].main, seconds))


def restored_copy(s: Session, run: str, folder: Path):
    """Seed 0's ``run`` as it ships, loaded from its shipped ``folder`` (the state's or the book's) through a copy in
    this machine's runs folder (verified against its manifest first)."""
    import dataclasses
    import shutil

    from cnet_lib.images.runs.run_loading import load_finished
    from cnet_lib.images.runs.run_store import run_configs
    from cnet_lib.images.runs.shipped import verify_shipped

    manifest = verify_shipped(folder)
    cfg = run_configs(settings_for(s), verbose=False, controls=True)[run]
    target = Path(f"{cfg.out_dir}-{SS.WEIGHTS}")
    target.mkdir(parents=True, exist_ok=True)
    for name in manifest["files"]:
        shutil.copyfile(folder / name, target / name)
    loaded = load_finished(run, dataclasses.replace(cfg, out_dir=str(target)), target, settings_for(s), time.perf_counter(),
                           True, True)
    if loaded is None:
        raise RuntimeError(f"{folder} does not hold a finished run of the {s.preset} preset's {run}")
    return loaded


def ship_seed0(s: Session) -> None:
    """Seed 0's main runs shipped into the work folder when one was trained now (with the pair's studies when both
    are at hand: the one trained earlier is restored from its folder) and tarred into OUT, one tar per run."""
    from cnet_lib.images.studies.shipping import ship_studied

    mains = [u.run for u in SS.plan(s.preset, [0]) if u.main]
    now = {r: s.copies[(0, r)] for r in mains if (0, r) in s.copies}
    runs = {r: now[r] if r in now else restored_copy(s, r, s.folders[r]) for r in mains if r in now or r in s.folders}
    dest = s.work / "shipped"
    dest.mkdir(exist_ok=True)
    command = f"scripts/gpu_session.sh (CNET_DATA_DIR=<the pack>, recipe {s.recipe or s.preset}) -> ship {s.preset}"
    folders = ship_studied(runs, DESCRIPTION.format(weights=SS.WEIGHTS), command, dest, weights=SS.WEIGHTS)
    s.summary["shipped"] = {}
    for run, folder in zip(runs, folders):  # each, the one restored too: it now holds the pair's studies
        s.folders[run] = folder
        tar_path = s.out / f"shipped-{s.preset}-{run}.tar"
        with tarfile.open(tar_path, "w") as tar:
            tar.add(folder, arcname=folder.name)
        s.summary["shipped"][run] = {"tar": tar_path.name, "bytes": tar_path.stat().st_size}


def over_seeds(s: Session) -> None:
    """The claims over every seed whose main runs are done (sweeps' contrast, robustness), in the summary."""
    from cnet_lib.images import contrast_over_seeds, robustness_over_seeds
    from cnet_lib.report import (contrast_over_seeds_table, robustness_over_seeds_table, word_contrast_over_seeds,
                                 word_robustness_over_seeds)

    mains = [u.run for u in SS.plan(s.preset, [0]) if u.main]
    done = {k: r for k, r in s.records.items() if all(SS.unit_done(SS.Unit(k, m, True), s.records) for m in mains)}
    if not done:
        return
    contrast = contrast_over_seeds({k: {m: r["sweeps"][m] for m in mains} for k, r in done.items()})
    robust = robustness_over_seeds({k: r["robustness"] for k, r in done.items()})
    s.summary["over_seeds"] = {
        "seeds": sorted(done), "contrast_outcome": contrast.outcome, "contrast_methods": contrast.methods,
        "contrast_table": str(contrast_over_seeds_table(contrast)),
        "contrast_words": word_contrast_over_seeds(contrast).splitlines(),
        "robustness_outcome": robust.outcome, "robustness_table": str(robustness_over_seeds_table(robust)),
        "robustness_words": str(word_robustness_over_seeds(robust))}
    print(s.summary["over_seeds"]["contrast_table"], "\n", s.summary["over_seeds"]["robustness_table"], flush=True)


def train_session(s: Session, missing: list) -> None:
    """Every missing unit, seed by seed, main runs before controls (module doc); seed 0 shipped after its stage (or
    first, when its two runs were shipped one by one by earlier commands and both are here)."""
    mains = [u.run for u in SS.plan(s.preset, [0]) if u.main]
    if set(s.folders) >= set(mains) and not SS.pair_shipped(s.folders):
        s.stage("ship", SHIP_ESTIMATE_S, lambda: ship_seed0(s))
    for main in (True, False):
        for seed in s.seeds:
            units = [u for u in missing if u.seed == seed and u.main == main]
            if not units:
                continue
            name = f"{'seed' if main else 'controls'} {seed}"
            if s.stopped():
                s.summary["stages"][name] = {"status": f"skipped: {s.stopped()}"}
                continue
            s.stage(name, min(estimate(s, u.run) for u in units), lambda seed=seed, units=units: seed_stage(s, seed, units))
            if main and seed == 0 and any((0, u.run) in s.copies for u in units):
                s.stage("ship", SHIP_ESTIMATE_S, lambda: ship_seed0(s))
    s.summary["units"]["missing_at_end"] = [u.name for u in SS.missing_units(SS.plan(s.preset, s.seeds), s.records,
                                                                             {**s.held, **s.folders})]
    s.stage("over seeds", 0, lambda: over_seeds(s))


# --------------------------------------------------------------------------- the checks
def chapter_jobs(s: Session, which: str) -> list:
    """The command running the pendulum or the image chapters (in a dry run: one of each)."""
    from cnet_lib.book.toc import toc_notebooks

    names = [nb.stem for nb in toc_notebooks(ROOT)]
    chosen = [n for n in names if (n in PENDULUM_CHAPTERS) == (which == "pendulum")]
    if s.dry:
        chosen = DRY_CHAPTERS[which]
    return [sys.executable, "scripts/run_chapters.py", str(s.work / f"chapters-{which}.json"), s.preset, "--only", *chosen]


def merge_chapters(s: Session) -> None:
    """One chapters.json in OUT from the two chapter jobs, with the table of contents they cover."""
    merged, toc = {}, []
    for which in ("pendulum", "images"):
        path = s.work / f"chapters-{which}.json"
        if path.is_file():
            data = json.loads(path.read_text())
            merged.update(data["chapters"])
            toc = data["toc"]
    for name, result in merged.items():
        if result["status"] == "running":  # the job was stopped inside this chapter
            seconds = round(time.time() - result.get("started_unix", time.time()), 1)
            result.update(status=f"stopped at the deadline after {seconds:.0f} s in this chapter", seconds=seconds)
    (s.out / "chapters.json").write_text(json.dumps({"chapters": merged, "toc": toc}, indent=1))
    s.summary["chapters"] = {k: {"status": v["status"], "seconds": v["seconds"], "preset": v["preset"]} for k, v in merged.items()}


def graphed_callables(s: Session) -> None:
    """benchmarks/bench_gpu.py's rows of StepRunner (one CUDA graph of the whole SGD step) against
    torch.cuda.make_graphed_callables (forward and backward graphed), at the preset's final graphs."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import torch
    from bench_gpu import time_graphed_callables
    from cnet_lib.images.runs.image_presets import image_runs

    device = torch.device(s.device)
    rows = []
    for cfg in image_runs(s.preset).values():
        steps, warmup = (30, 5) if device.type == "cuda" else (2, 1)
        rows.append(time_graphed_callables(cfg.channels, cfg.scheme, cfg.final_n_steps(), cfg.batch_size, device,
                                           steps, warmup))
    s.summary["graphed_callables"] = rows
    if any("error" in r for r in rows):
        raise RuntimeError(f"make_graphed_callables or StepRunner failed: {rows}")


def pendulum_batched(s: Session) -> None:
    """benchmarks/bench_pendulum_batched.py on this session's device, into OUT/pendulum_batched.json (``session_files
    accept`` keeps it as benchmarks/results/pendulum_batched-gpu-<device>.json, which the chapter cards quote)."""
    budget = max(min(s.left(), PENDULUM_BATCHED_LIMIT_S) - 30, 10)  # the calibration comes before the timed run
    bench = [sys.executable, "benchmarks/bench_pendulum_batched.py", "--preset", "gpu", "--device", s.device,
             "--max-seconds", f"{budget:.0f}", "--out", str(s.out / "pendulum_batched.json")] + (
        ["--dry-run"] if s.dry else [])
    subprocess.run(bench, cwd=ROOT, check=True, timeout=max(min(s.left(), PENDULUM_BATCHED_LIMIT_S + 30), 1))


def live_apps(s: Session) -> None:
    """benchmarks/bench_live_apps.py in this session's preset and device, into OUT/live_apps.json (written
    after every group of apps, so a stop keeps the finished groups)."""
    live = [sys.executable, "benchmarks/bench_live_apps.py", "--preset", s.preset, "--device", s.device,
            "--runs-dir", str(s.work / "runs"), "--out", str(s.out / "live_apps.json")] + (["--quick"] if s.dry else [])
    subprocess.run(live, cwd=ROOT, check=True, timeout=max(min(s.left(), LIVE_APPS_LIMIT_S), 1))


def why_no_checks(s: Session) -> str:
    """Why this session runs no checks (``""`` when it does): another recipe than the preset's is trained (the
    chapters would check the preset, not it), the notebook stack is not here, the time is spent, or their files
    would not come back."""
    if s.recipe is not None and s.recipe != SS.recipes(s.preset)[0]:
        return (f"the {s.recipe} recipe is trained, not yet the preset's: the chapters check it once accept has "
                "switched the preset")
    if not s.notebooks:
        return "the notebook stack is not installed (bash scripts/gpu_wheels.sh here, then carry .whl)"
    if s.left() < 120:
        return f"{s.left():.0f} s left"
    out_files = len([p for p in s.out.iterdir() if p.is_file()]) + 1  # and the log
    if out_files + len(CHECK_FILES) > MAX_FILES:
        return f"{out_files} files already come back: the checks' {len(CHECK_FILES)} would pass the limit of {MAX_FILES}"
    return ""


def checks(s: Session, child_env: dict) -> None:
    """The checks (:data:`REUSE_PLAN`): in the background the cuda tests, the pendulum chapters and the image
    chapters on the preset's models; then the graphed-callables rows, the pendulum's batched training and the live
    apps."""
    s.start("cuda_tests", [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/test_cuda.py",
                           "tests/test_device_paths.py"])
    s.start("chapters_pendulum", chapter_jobs(s, "pendulum"), child_env)
    s.start("chapters_images", chapter_jobs(s, "images"), {**child_env, "CNET_PRESET": s.preset})
    s.stage("graphed callables", 20, lambda: graphed_callables(s))
    s.stage("pendulum batched", 60, lambda: pendulum_batched(s))
    s.stage("live apps", 40, lambda: live_apps(s))


def throughput(s: Session) -> None:
    """benchmarks/bench_gpu_throughput.py on this device (the dry run's tiny sizes on the CPU), into
    OUT/throughput.json (``accept`` keeps a GPU's as benchmarks/results/gpu_throughput-<gpu>.json)."""
    budget = max(min(s.left() - 60, THROUGHPUT_LIMIT_S), 20)
    bench = [sys.executable, "benchmarks/bench_gpu_throughput.py", "--out", str(s.out / "throughput.json"),
             "--max-seconds", f"{budget:.0f}"] + (["--dry-run"] if s.dry else [])
    subprocess.run(bench, cwd=ROOT, check=True, timeout=budget + 60)


def finish(s: Session) -> None:
    """Collect the background jobs, copy their results into OUT, estimate a T4, check the return limits."""
    for name in ("cuda_tests", "chapters_pendulum", "chapters_images"):
        if name in s.background:
            s.join(name)
    if (s.work / "cuda_tests.txt").is_file() and "cuda_tests" in s.background:
        text = (s.work / "cuda_tests.txt").read_text()
        (s.out / "cuda_tests.txt").write_text(text[-200_000:])
        s.summary["cuda_tests_last_line"] = (text.strip().splitlines() or [""])[-1]
    if "chapters_images" in s.background:
        merge_chapters(s)
    s.summary["t4_estimate"] = t4_estimate(s.summary)
    s.write_summary()
    s.summary["out_files"] = check_out_limits(s.out)
    s.write_summary()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--work", default=str(ROOT / "_build" / "gpu_session"))
    p.add_argument("--state", default=str(SS.STATE) if SS.STATE.is_dir() else None,
                   help="the folder of what earlier commands finished (default gpu_state/ when it exists)")
    p.add_argument("--shipped", default=None, help="where the book's shipped models are (default cnet_lib/shipped; "
                   "the rehearsal's own folder)")
    p.add_argument("--deadline-s", type=float, default=540.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--recipe", default="auto", help="auto (the next recipe of the gpu preset), current, or a name")
    p.add_argument("--train", choices=("auto", "always", "never"), default="auto",
                   help="auto: train what is missing (nothing missing: the checks alone); always: every unit again; "
                   "never: the checks alone")
    p.add_argument("--throughput", action="store_true", help="time the throughput candidates first")
    p.add_argument("--no-notebooks", action="store_true", help="the notebook stack is missing: no checks")
    p.add_argument("--stop-after-units", type=int, default=None,
                   help="start no unit after this many trained (a deadline, rehearsed)")
    p.add_argument("--dry-run", action="store_true", help="the CPU rehearsal: smoke preset, one chapter of each kind")
    args = p.parse_args(argv)
    s = Session(args)
    from cnet_lib.runtime.device import environment

    s.summary["machine"] = environment(s.device)
    child_env = {"CNET_RUNS_DIR": str(s.work / "runs"), "CNET_DEVICE": s.device}
    if args.throughput:
        s.stage("throughput", 60, lambda: throughput(s))
    with SS.recipe_in_force(s.preset, s.recipe):
        missing = know(s) if args.train != "never" else []
        s.summary["reused"] = None if missing else (
            f"nothing to train for the {s.recipe or s.preset} recipe of the {s.preset} preset: its models and records "
            "are all there" if args.train != "never" else "--train never")
        print(f"=== {s.summary['reused'] or f'{len(missing)} units to train: ' + ', '.join(u.name for u in missing)}",
              flush=True)
        if missing:
            train_session(s, missing)
    why = why_no_checks(s)
    s.summary["checks"] = why or "run"
    if why:
        print(f"=== checks: not run ({why})", flush=True)
    else:
        checks(s, child_env)
    finish(s)
    failed = [k for k, v in s.summary["stages"].items() if str(v.get("status")).startswith(("FAILED", "stopped"))]
    print(f"gpu_session: {'every stage run passed' if not failed else 'not passed: ' + ', '.join(failed)}; "
          f"{s.summary['seconds']:.0f} s; files in {s.out}", flush=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
