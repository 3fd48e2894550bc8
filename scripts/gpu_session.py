"""The GPU session's driver (run by scripts/gpu_session.sh): the `gpu` preset trained on the data pack from
three training seeds per method, studied, shipped, and checked on CUDA, inside one 10-minute command.

With ``--train auto`` (the default) and the preset's models already shipped with every asked seed in their
seeds.json (the ``gpu`` preset since the H100 session of 2026-11-27), nothing is trained: the session checks
CUDA with the shipped models (:data:`REUSE_PLAN`):

    background, from the start: the `cuda` tests; the pendulum chapters (smoke, on the CPU); the image
               chapters in the preset on CUDA, loading the shipped models (per-chapter results written
               after every chapter, so a stop at the deadline keeps the finished ones)
    graphed callables  bench_gpu's StepRunner against torch.cuda.make_graphed_callables, ms per SGD step
    pendulum batched  the pendulum study's ODE-Nets trained at once (CUDA graphs) against one after another
               (benchmarks/bench_pendulum_batched.py, its budget scaled to the time left)
    live apps  seconds per interaction of every live app (image apps first; written after every group)

Otherwise (``--train always``, or nothing shipped for the preset: the dry run's smoke preset) it trains.
Stages, in order of what matters most (each one is skipped, and said so, when the time left is less than
its estimate; a rerun on the same machine resumes: finished runs and studies are loaded from the work
folder, a half-trained run continues from its last epoch):

    background, from the start: the `cuda` tests; the pendulum chapters (smoke, on the CPU)
    seed 0     train both runs, their sweeps and the robustness study on the 5,000 held-out images
    ship       python -m cnet_lib ship's function for the preset -> shipped-<preset>.tar
    background: the image chapters in the preset, on CUDA, loading seed 0 (no training)
    seed 1, 2  the same as seed 0
    seeds      every seed's numbers in seeds.json beside seed 0, shipped again; the contrast and the
               robustness rows over the seeds
    live apps  seconds per interaction of every live app on this device (benchmarks/bench_live_apps.py)

Measured (the H100 training session of 2026-11-27, the book's page On a GPU, `book/gpu.md`): a seed took 128-147 s (training 86-88 s,
its sweeps 21-24 s, its robustness study 15-17 s), the three seeds, the ship and the seeds stage 420 s; the cuda
tests 48 s; the image chapters did not finish beside seeds 1 and 2 (stopped after 306 s), which is why a
session that reuses the shipped models starts them first.  The check session that followed (reuse, deadline
350 s) took 296 s: the image chapters 292 s in the background, the graphed callables 9 s and the live apps 92 s
in the foreground.  The summary records each stage's seconds, and a stage that does not fit is left for the
rerun.

    python scripts/gpu_session.py --out OUT [--work DIR] [--deadline-s 540] [--train auto|always] [--dry-run]

Writes into OUT (at most 8 files, each at most 16 MiB: the GPU machine's return limits, checked):
gpu_session.json (every stage, every seed's numbers, the machine), shipped-<preset>.tar, chapters.json,
cuda_tests.txt, live_apps.json (and gpu_session.log, written by the shell script).
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
from session_files import check_out_limits, t4_estimate  # noqa: E402

SEED_ESTIMATE_S = {"gpu": 140, "smoke": 30}  # the H100 session of 2026-11-27: 128-147 s a seed with its studies
REUSE_PLAN = ("cuda_tests", "chapters_pendulum", "chapters_images", "graphed callables", "pendulum batched", "live apps")
"""The stages of a session that reuses the shipped models (no training, no shipping)."""
PENDULUM_BATCHED_LIMIT_S = 150
"""At most this long for the pendulum's batched training against one model after another (issue 31: its GPU time)."""
LIVE_APPS_LIMIT_S = 150
"""At most this long for the live-app timings (the H100 session stopped them at 45 s, in the pendulum app)."""
PENDULUM_CHAPTERS = ("how_to_use", "pendulum_integrators", "resnet_euler")
DRY_CHAPTERS = {"pendulum": ["how_to_use"], "images": ["manifestation_invariance"]}


class Session:
    """The session's state: where it writes, its deadline, its stages and the summary written after each."""

    def __init__(self, args):
        self.t0 = time.monotonic()
        self.out, self.work = Path(args.out), Path(args.work)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.dry, self.deadline = args.dry_run, args.deadline_s
        self.preset = "smoke" if self.dry else "gpu"
        self.device = "cpu" if self.dry else "cuda"
        self.seeds = list(args.seeds)
        self.train = args.train
        self.summary = {"preset": self.preset, "dry_run": self.dry, "stages": {}, "seeds": {}}
        self.background = {}

    def left(self) -> float:
        return self.deadline - (time.monotonic() - self.t0)

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


def study_seed(s: Session, seed: int) -> None:
    """Train (or load) both runs of ``seed``, sweep them, study their robustness; record the numbers."""
    from cnet_lib.images import robustness_runs, seed_record, sweep_runs, trained_runs
    from cnet_lib.images.studies.robustness_cached import robustness_cache
    from cnet_lib.images.studies.sweep_cached import sweep_cache
    from cnet_lib.images.runs.image_presets import robustness_grid, sweep_grid
    from cnet_lib.runtime.device import resolve_device

    settings = settings_for(s)
    runs = trained_runs(settings, use_shipped=False, verbose=True, seed=seed)
    sweeps = sweep_runs(runs, verbose=True)
    study = robustness_runs(runs, verbose=True)
    record = seed_record(runs, sweeps, study)
    dev = resolve_device(s.device)
    seconds = {f"sweep {n}": json.loads(sweep_cache(r, sweep_grid(s.preset), dev)[0].read_text()).get("seconds")
               for n, r in runs.items()}
    seconds["robustness"] = json.loads(robustness_cache(runs, robustness_grid(s.preset), dev)[0].read_text()).get("seconds")
    (s.work / f"seed-{seed}.json").write_text(json.dumps(record))
    s.summary["seeds"][str(seed)] = {"runs": record["runs"], "study_seconds": seconds,
                                     "history": {n: r.history for n, r in runs.items()}}


def ship_seed0(s: Session) -> None:
    """Ship seed 0 of the preset into the work folder (the library's own ship) and tar it into OUT."""
    from cnet_lib.cli.ship import ship

    dest = s.work / "shipped"
    dest.mkdir(exist_ok=True)
    description = ("all 45,000 training images of the project's CIFAR-10 copy, read from its WebP pack (quality 90, "
                   "`python -m cnet_lib pack ../shared/data-large shared_pack`); accuracies on its 5,000 held-out "
                   "validation images; training seed 0")
    command = f"scripts/gpu_session.sh (CNET_DATA_DIR=<the pack>) -> ship {s.preset}"
    folders = ship(settings_for(s), description, command, dest=dest)
    tar_path = s.out / f"shipped-{s.preset}.tar"
    with tarfile.open(tar_path, "w") as tar:
        for folder in folders:
            tar.add(folder, arcname=folder.name)
    s.summary["shipped"] = {"tar": tar_path.name, "folders": [f.name for f in folders],
                            "bytes": sum(p.stat().st_size for f in folders for p in f.iterdir())}


def seeds_stage(s: Session) -> None:
    """Every finished seed in seeds.json beside seed 0 (then shipped again), and the claims over seeds."""
    from cnet_lib.images import contrast_over_seeds, robustness_over_seeds, trained_runs
    from cnet_lib.images.studies.seed_cached import SEEDS_FILE, write_seeds_file
    from cnet_lib.report import (contrast_over_seeds_table, robustness_over_seeds_table, word_contrast_over_seeds,
                                 word_robustness_over_seeds)
    from cnet_lib.runtime.device import environment

    records = [json.loads((s.work / f"seed-{k}.json").read_text()) for k in s.seeds if (s.work / f"seed-{k}.json").is_file()]
    runs0 = trained_runs(settings_for(s), use_shipped=False, verbose=False, seed=0)
    write_seeds_file(next(iter(runs0.values())).out_dir / SEEDS_FILE, records, s.preset, environment(s.device))
    ship_seed0(s)
    sweeps = {r["seed"]: r["sweeps"] for r in records}
    studies = {r["seed"]: r["robustness"] for r in records}
    contrast = contrast_over_seeds(sweeps)
    robust = robustness_over_seeds(studies)
    s.summary["over_seeds"] = {
        "seeds": [r["seed"] for r in records], "contrast_outcome": contrast.outcome, "contrast_methods": contrast.methods,
        "contrast_table": str(contrast_over_seeds_table(contrast)),
        "contrast_words": word_contrast_over_seeds(contrast).splitlines(),
        "robustness_outcome": robust.outcome, "robustness_table": str(robustness_over_seeds_table(robust)),
        "robustness_words": str(word_robustness_over_seeds(robust))}
    print(s.summary["over_seeds"]["contrast_table"], "\n", s.summary["over_seeds"]["robustness_table"], flush=True)


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


def reuse_shipped(preset: str, seeds) -> str:
    """Why the shipped models of ``preset`` can stand in for training (every run shipped for the current
    preset, its seeds.json holding every seed of ``seeds``), or ``""`` when they cannot."""
    from cnet_lib.images.runs import shipped as SHP
    from cnet_lib.images.runs.image_presets import image_runs
    from cnet_lib.images.studies.seed_cached import SEEDS_FILE, read_seeds_file

    runs = image_runs(preset)
    folders = [SHP.shipped_run(cfg) for cfg in runs.values()]
    if not all(folders):
        return ""
    payload = read_seeds_file(folders[0] / SEEDS_FILE)
    have = sorted(r["seed"] for r in (payload or {}).get("seeds", []))
    if not set(seeds) <= set(have):
        return ""
    where = json.loads((folders[0] / SHP.MANIFEST).read_text()).get("machine", {}).get("device_name", "?")
    return f"the {preset} preset's models ship (trained on {where}, seeds {have} in seeds.json): nothing is retrained"


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


def reuse_session(s: Session, child_env: dict) -> None:
    """The session that checks CUDA with the shipped models (:data:`REUSE_PLAN`): the image chapters start at
    once, beside the cuda tests and the pendulum chapters; then the graphed-callables rows and the live apps."""
    s.start("chapters_images", chapter_jobs(s, "images"), {**child_env, "CNET_PRESET": s.preset})
    s.stage("graphed callables", 20, lambda: graphed_callables(s))
    s.stage("pendulum batched", 60, lambda: pendulum_batched(s))
    s.stage("live apps", 40, lambda: live_apps(s))


def train_session(s: Session, child_env: dict) -> None:
    """The session that trains the seeds (module doc), ships seed 0 and sums up the seeds."""
    estimate = SEED_ESTIMATE_S[s.preset]
    for k, seed in enumerate(s.seeds):
        done = s.stage(f"seed {seed}", estimate, lambda seed=seed: study_seed(s, seed))
        if k == 0 and done:
            s.stage("ship", 20, lambda: ship_seed0(s))
            s.start("chapters_images", chapter_jobs(s, "images"), {**child_env, "CNET_PRESET": s.preset})
    s.stage("seeds", 8, lambda: seeds_stage(s))  # seconds: every seed in seeds.json and shipped again
    s.stage("graphed callables", 20, lambda: graphed_callables(s))
    s.stage("pendulum batched", 60, lambda: pendulum_batched(s))
    s.stage("live apps", 40, lambda: live_apps(s))


def finish(s: Session) -> None:
    """Collect the background jobs, copy their results into OUT, estimate a T4, check the return limits."""
    for name in ("cuda_tests", "chapters_pendulum", "chapters_images"):
        if name in s.background:
            s.join(name)
    if (s.work / "cuda_tests.txt").is_file():
        text = (s.work / "cuda_tests.txt").read_text()
        (s.out / "cuda_tests.txt").write_text(text[-200_000:])
        s.summary["cuda_tests_last_line"] = (text.strip().splitlines() or [""])[-1]
    merge_chapters(s)
    s.summary["t4_estimate"] = t4_estimate(s.summary)
    s.write_summary()
    s.summary["out_files"] = check_out_limits(s.out)
    s.write_summary()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--work", default=str(ROOT / "_build" / "gpu_session"))
    p.add_argument("--deadline-s", type=float, default=540.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--train", choices=("auto", "always"), default="auto",
                   help="auto: reuse the preset's shipped models when they hold every seed (no training); always: train")
    p.add_argument("--dry-run", action="store_true", help="the CPU rehearsal: smoke preset, one chapter of each kind")
    s = Session(p.parse_args(argv))
    from cnet_lib.runtime.device import environment

    s.summary["machine"] = environment(s.device)
    child_env = {"CNET_RUNS_DIR": str(s.work / "runs"), "CNET_DEVICE": s.device}
    s.start("cuda_tests", [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/test_cuda.py",
                           "tests/test_device_paths.py"])
    s.start("chapters_pendulum", chapter_jobs(s, "pendulum"), child_env)
    reason = reuse_shipped(s.preset, s.seeds) if s.train == "auto" else ""
    s.summary["reused"] = reason or None
    print(f"=== {reason or 'training the seeds'}", flush=True)
    (reuse_session if reason else train_session)(s, child_env)
    finish(s)
    failed = [k for k, v in s.summary["stages"].items() if not str(v.get("status")).startswith("passed")]
    print(f"gpu_session: {'every stage passed' if not failed else 'not passed: ' + ', '.join(failed)}; "
          f"{s.summary['seconds']:.0f} s; files in {s.out}", flush=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
