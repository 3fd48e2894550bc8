"""``bash scripts/gpu_session.sh`` rehearsed on the CPU (``GPU_SESSION_DRY_RUN=1``): the one command a GPU
session runs goes through every stage on a data pack (three training seeds of both runs with their sweeps
and robustness studies, the ship, the claims over the seeds, the chapters, the cuda tests, the live-app
timings), brings back only what the GPU machine's return limits allow, and its files are taken in by
``scripts/session_files.py accept`` into shipped folders that pass the checks of tests/test_shipped.py.  The
dry run is the smoke preset on the CPU with one pendulum and one image chapter; the real one runs every
chapter of _toc.yml, which chapters.json lists."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cnet_lib.book.toc import toc_notebooks
from cnet_lib.images.studies import seed_cached as SF
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.images.data.pack_writer import write_pack
from shipped_checks import check_preset_folders

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_session  # noqa: E402
import session_files  # noqa: E402

pytestmark = pytest.mark.slow  # rehearses the GPU session's training path on the CPU


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("session")
    write_fake_cifar(root / "src", n_train=300, n_test=150)
    write_pack(root / "src", root / "pack", quality=90)
    env = {**os.environ, "GPU_SESSION_DRY_RUN": "1", "PYTHON": sys.executable, "CNET_DATA_DIR": str(root / "pack"),
           "GPU_SESSION_WORK": str(root / "work"), "GPU_SESSION_DEADLINE_S": "900"}
    env.pop("CNET_PRESET", None)
    out = subprocess.run(["bash", "scripts/gpu_session.sh", str(root / "out")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=1200)
    return root, out


def test_every_stage_runs_on_the_pack_and_the_files_fit_the_return_limits(session):
    root, proc = session
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    out = root / "out"
    summary = json.loads((out / "gpu_session.json").read_text())
    assert summary["preset"] == "smoke" and summary["dry_run"]
    assert all(v["status"] == "passed" for v in summary["stages"].values()), summary["stages"]
    assert {"seed 0", "seed 1", "seed 2", "ship", "seeds", "live apps", "cuda_tests", "chapters_pendulum",
            "chapters_images", "graphed callables", "pendulum batched"} <= set(summary["stages"])
    assert sorted(summary["seeds"]) == ["0", "1", "2"]
    assert summary["reused"] is None, "nothing ships for the smoke preset: the dry run trains"
    assert [r["skipped"] for r in summary["graphed_callables"]] == ["torch.cuda.make_graphed_callables needs CUDA"] * 2
    accuracies = {seed: {run: r["final_test_acc"] for run, r in s["runs"].items()} for seed, s in summary["seeds"].items()}
    assert len({json.dumps(a, sort_keys=True) for a in accuracies.values()}) > 1, "three seeds trained three times the same"
    over = summary["over_seeds"]
    assert over["seeds"] == [0, 1, 2] and "3 training seeds per method" in over["contrast_table"]
    assert "3 training seeds per method" in over["robustness_table"] and over["robustness_words"].startswith("VERDICT")
    chapters = json.loads((out / "chapters.json").read_text())
    assert chapters["toc"] == [nb.stem for nb in toc_notebooks(ROOT)], "the real run executes every chapter of _toc.yml"
    assert {k: v["status"] for k, v in chapters["chapters"].items()} == {"how_to_use": "passed",
                                                                          "manifestation_invariance": "passed"}
    assert "skipped" in summary["cuda_tests_last_line"], "without a GPU the cuda tests are counted as skipped"
    files = dict(session_files.check_out_limits(out))
    assert set(files) == {"gpu_session.json", "gpu_session.log", "shipped-smoke.tar", "chapters.json", "cuda_tests.txt",
                          "live_apps.json", "pendulum_batched.json"}
    pendulum = json.loads((out / "pendulum_batched.json").read_text())
    assert pendulum["dry_run"] and pendulum["device"] == "cpu" and pendulum["preset"] == "gpu"
    live = json.loads((out / "live_apps.json").read_text())
    assert live["sweep_app"] and live["robustness_app"] and live["rollout_app"] and live["solver_app"]
    assert live["complete"] and live["groups"] == ["image", "solver", "pendulum"]


def test_the_next_session_reuses_the_shipped_gpu_models_and_trains_nothing():
    """``--train auto`` (the default): the gpu preset's shipped models hold seeds 0, 1, 2, so the next GPU
    session only checks CUDA with them (gpu_session.REUSE_PLAN); a preset without shipped models, or a seed the
    seeds file lacks, trains."""
    reason = gpu_session.reuse_shipped("gpu", [0, 1, 2])
    assert "nothing is retrained" in reason and "H100" in reason
    assert gpu_session.reuse_shipped("gpu", [0, 1, 2, 3]) == ""
    assert gpu_session.reuse_shipped("smoke", [0, 1, 2]) == ""
    assert {"graphed callables", "pendulum batched", "live apps"} <= set(gpu_session.REUSE_PLAN)
    assert not any(stage.startswith(("seed", "ship")) for stage in gpu_session.REUSE_PLAN)


def test_the_pendulum_chapters_can_run_in_the_preset_a_gpu_reader_gets():
    """run_chapters.py runs the pendulum chapters in smoke by default and, asked, in the gpu preset (a reader's
    on a GPU: their ODE-Nets train on the CPU, so a CPU machine times them); the image chapters in theirs."""
    import run_chapters

    chapters = toc_notebooks(ROOT)
    default = run_chapters.chapter_presets(chapters, "gpu")
    assert list(default) == [nb.stem for nb in chapters]
    assert {default[n] for n in run_chapters.PENDULUM} == {"smoke"}
    assert {p for n, p in default.items() if n not in run_chapters.PENDULUM} == {"gpu"}
    asked = run_chapters.chapter_presets(chapters, "gpu", "gpu", only=["resnet_euler", "adaptive"])
    assert asked == {"resnet_euler": "gpu", "adaptive": "gpu"}


def test_a_stopped_chapter_job_still_brings_back_the_chapters_it_finished(tmp_path):
    """run_chapters.py rewrites its JSON before and after every chapter; finish() merges it into OUT and names
    the chapter the job was stopped in."""
    import argparse
    import time

    args = argparse.Namespace(out=str(tmp_path / "out"), work=str(tmp_path / "work"), dry_run=True, deadline_s=60,
                              seeds=[0], train="auto")
    s = gpu_session.Session(args)
    done = {"preset": "gpu", "status": "passed", "seconds": 12.5, "text_tail": ""}
    running = {"preset": "gpu", "status": "running", "seconds": 0.0, "started_unix": time.time() - 30}
    (s.work / "chapters-images.json").write_text(json.dumps({"chapters": {"continuousnet": done, "robustness": running},
                                                             "toc": ["continuousnet", "robustness"]}))
    gpu_session.merge_chapters(s)
    chapters = json.loads((s.out / "chapters.json").read_text())["chapters"]
    assert chapters["continuousnet"]["status"] == "passed"
    assert chapters["robustness"]["status"].startswith("stopped at the deadline after 3") and chapters["robustness"]["seconds"] >= 30


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])  # the H100 session of 2026-11-27 wrote "cuda:0"
def test_a_reuse_session_is_taken_in_without_touching_the_shipped_models(tmp_path, device):
    files = tmp_path / "files"
    files.mkdir()
    (files / "gpu_session.json").write_text(json.dumps({"preset": "gpu", "reused": "the gpu preset's models ship"}))
    (files / "chapters.json").write_text(json.dumps({"chapters": {}, "toc": []}))
    (files / "live_apps.json").write_text(json.dumps({"device": device, "groups": ["image"], "complete": False}))
    (files / "pendulum_batched.json").write_text(json.dumps({"device": device, "preset": "gpu", "dry_run": False}))
    session_files.accept(files, tmp_path / "shipped", tmp_path / "results")
    assert not (tmp_path / "shipped").exists()
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "gpu_chapters-gpu-check.json", "gpu_session-gpu-check.json", "live_apps-cuda.json", "pendulum_batched-gpu-cuda.json"]


def test_the_shipped_seed_is_taken_in_and_passes_the_shipped_checks(session, tmp_path):
    root, proc = session
    assert proc.returncode == 0
    with tarfile.open(root / "out" / "shipped-smoke.tar") as tar:
        assert sorted({Path(n).parts[0] for n in tar.getnames()}) == ["smoke-euler_fixed", "smoke-rk4_refined"]
    summary = session_files.accept(root / "out", tmp_path / "shipped", tmp_path / "results", max_bytes=12_000_000)
    manifests = check_preset_folders(tmp_path / "shipped", "smoke", "rerun the dry run")
    assert all(m["data"]["n_test"] == 128 for m in manifests)
    seeds = json.loads((tmp_path / "shipped" / "smoke-rk4_refined" / SF.SEEDS_FILE).read_text())
    assert [s["seed"] for s in seeds["seeds"]] == [0, 1, 2]
    assert (tmp_path / "results" / "gpu_session-smoke.json").is_file() and (tmp_path / "results" / "live_apps-cpu.json").is_file()
    assert summary["t4_estimate"] == {}, "a CPU rehearsal has no GPU peak to scale from: no T4 estimate"
    on_h100 = dict(summary, machine=dict(summary.get("machine") or {}, device_name="NVIDIA H100 80GB HBM3"))
    assert session_files.t4_estimate(on_h100)["image_chapters_minutes"] > 0


def test_the_limits_are_checked():
    pass_dir = ROOT / "scripts"
    with pytest.raises(ValueError, match="at most 8 come back"):
        session_files.check_out_limits(pass_dir.parent / "cnet_lib" / "images")
