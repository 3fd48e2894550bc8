"""`cnet book_plan`: what a book build will load or train, said before it starts."""
from __future__ import annotations

import json

import pytest

from cnet_lib.images.runs import image_presets as RF, shipped as SHP
from cnet_lib.runtime.progress import duration
from cnet_lib.runtime.settings import Settings
from cnet_lib.book import measurements as M
from cnet_lib.cli import book_plan as BP
from cnet_lib.images import image_runs


def test_plan_says_what_is_trained_and_how_to_preview(monkeypatch, tmp_path):
    settings = Settings(preset="cpu", runs_dir=tmp_path / "runs", device="cpu")
    monkeypatch.setattr(SHP, "SHIPPED", tmp_path / "shipped")
    lines = BP.plan(settings)
    assert lines[0].startswith("== preset 'cpu'")
    assert sum("will be TRAINED" in ln for ln in lines) == 2
    # no model of the preset ships (or none as the preset is now): its training time is not measured, said so
    assert any("not measured: no cpu models of the preset as it is now ship" in ln for ln in lines)
    monkeypatch.undo()
    measured = M.shipped_training("cpu")  # the shipped models' own records of their training and studies
    assert f"{duration(measured['train_seconds'])} to train both image models" in M.expected_build("cpu", trains=True)
    monkeypatch.setattr(SHP, "SHIPPED", tmp_path / "shipped")
    assert any("CNET_PRESET=smoke" in ln for ln in lines)
    # a shipped model for one run: that run is loaded, and the estimate still counts the other's training
    cfg = image_runs("cpu")["rk4_refined"]
    folder = tmp_path / "shipped" / "cpu-rk4_refined"
    folder.mkdir(parents=True)
    (folder / SHP.MANIFEST).write_text(json.dumps({"identity_hash": RF.identity_hash(cfg)}))
    lines = BP.plan(settings)
    assert any(ln.strip().startswith("rk4_refined: a trained model ships") for ln in lines)
    assert sum("will be TRAINED" in ln for ln in lines) == 1
    smoke = BP.plan(settings.replace(preset="smoke"))
    assert not any("quicker" in ln for ln in smoke)
    # both models shipped: the cpu build is about as quick as the smoke one, so no "quicker check" is offered
    other = tmp_path / "shipped" / "cpu-euler_fixed"
    other.mkdir(parents=True)
    (other / SHP.MANIFEST).write_text(json.dumps({"identity_hash": RF.identity_hash(image_runs("cpu")["euler_fixed"])}))
    lines = BP.plan(settings)
    assert not any("quicker" in ln for ln in lines) and any("measured, with the image models that ship" in ln for ln in lines)


def test_plan_refuses_an_unknown_preset(capsys):
    assert BP.main(["fast"]) == 1 and capsys.readouterr().err.startswith("error: unknown preset 'fast'")


def test_the_main_command_says_its_plan_before_building(tmp_path):
    """``bash scripts/book.sh`` up to the build (CNET_BOOK_DRY_RUN=1): the preset, the shipped models
    it loads and the measured time, printed before anything is built (no "quicker" smoke build is offered
    when the shipped models make the cpu build about as quick)."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not (root / ".venv" / "bin" / "python").exists():
        pytest.skip("needs the project's .venv (bash scripts/setup.sh)")
    env = {**os.environ, "CNET_BOOK_DRY_RUN": "1", "CNET_PRESET": "cpu", "CNET_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run(["bash", "scripts/book.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "== preset 'cpu'" in text and text.count("ships with the book for this preset: loaded, not trained") == 2
    assert "expected time" in text and "(measured, with the image models that ship with the book)" in text
    assert "quicker" not in text
    assert "stopping before the build" in text and not (tmp_path / "runs").exists()


def test_the_gpu_plan_quotes_what_was_measured_for_it():
    """The published (gpu) book's build with the shipped models and studies is measured as a whole on a CPU
    (benchmarks/bench_book.py gpu): the plan quotes it; trained instead, the T4 estimate from the shipped models'
    records."""
    text = M.expected_build("gpu", trains=False)
    build = M.book_builds()["gpu"]
    assert text.startswith(f"about {duration(build['build_seconds'])} on {build['machine']} (measured")
    assert "the published book" in text
    trained = M.expected_build("gpu", trains=True)
    t4 = M.t4_estimate("gpu")
    assert f"about {duration(60 * t4)} on a T4 (an estimate" in trained
