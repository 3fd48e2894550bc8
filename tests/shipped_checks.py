"""Checks of a shipped preset's folders (``cnet_lib/shipped/<preset>-<run>/``), shared by tests/test_shipped.py
(the presets the repository ships)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.training.train_state import CHECKPOINT, RESULTS
from cnet_lib.images.runs import image_presets as RF, shipped as SHP
from cnet_lib.runtime.checkpoint import config_diff
from cnet_lib.images import load_model

SHIP_COMMANDS = ("python -m cnet_lib ship", "python -m cnet_lib.ship", "-> ship ")  # older manifests: stale on purpose
"""How a manifest records the command that shipped it: the command line (today's and its first form), and the
GPU session's call of its function (the gpu preset's models of 2026-11-27)."""
MAX_BYTES = {"cpu": 5_000_000, "gpu": 2 * 16 * 2**20}
"""What a preset's shipped folders may hold together: the gpu preset's two, each at most 16 MiB (issue 45: each came
back from the GPU machine as one file, its weights in float16); any other preset as much."""
FOLDER_MAX_BYTES = 16 * 2**20
"""What one shipped folder may hold: one file's worth of the GPU machine's return limits."""


def check_preset_folders(root: Path, preset: str, retrain: str) -> list:
    """Every check of the shipped folders of ``preset`` under ``root``: the manifest matches the preset's
    current run (identity hash, preset, run, command, the record's keys, one history entry per epoch), every
    file matches its SHA-256 and nothing else is there, a sweep ships, the checkpoint loads as the preset's
    model with the manifest's accuracy and finite weights, and the folders together stay under the preset's
    size bound.  Returns the manifests."""
    manifests, total = [], 0
    for run, cfg in image_runs(preset).items():
        folder = Path(root) / f"{preset}-{run}"
        assert (folder / SHP.MANIFEST).is_file(), f"no shipped model for the {preset} preset's run {run!r} ({folder}): {retrain}"
        manifest = json.loads((folder / SHP.MANIFEST).read_text())
        assert manifest["identity_hash"] == RF.identity_hash(cfg), f"the {preset} preset's run {run!r} changed since its model was shipped: {retrain}"
        assert manifest["preset"] == preset and manifest["run"] == run
        assert any(command in manifest["command"] for command in SHIP_COMMANDS), manifest["command"]
        for key in ("machine", "train_seconds", "final_test_acc", "history", "data"):
            assert manifest.get(key), f"the manifest of {run} lacks {key!r}"
        assert len(manifest["history"]) == cfg.epochs
        files = manifest["files"]
        assert CHECKPOINT in files and RESULTS in files
        assert any(name.startswith("sweep-") for name in files), "the shipped run has no sweep: the chapters would recompute it"
        on_disk = {p.name for p in folder.iterdir()} - {SHP.MANIFEST}
        assert on_disk == set(files), f"files in {folder} differ from its manifest: {sorted(on_disk ^ set(files))}"
        for name, digest in files.items():
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, f"{folder / name} was changed after shipping"
        model, ck = load_model(folder, "cpu")  # weights_only=True inside
        assert not config_diff(ck["config"], cfg.identity()), f"the shipped checkpoint of {run} is not the preset's model"
        assert model.manifestation == [(cfg.scheme, cfg.final_n_steps())] * len(model.blocks)
        assert ck["extra"]["history"][-1]["test_acc"] == manifest["final_test_acc"]
        assert all(torch.isfinite(p).all() for p in model.parameters())
        size = sum((folder / name).stat().st_size for name in files)
        assert size <= FOLDER_MAX_BYTES, f"{folder} holds {size / 2**20:.1f} MiB, more than one file brings back"
        total += size
        manifests.append(manifest)
    bound = MAX_BYTES.get(preset, MAX_BYTES["gpu"])
    assert total < bound, f"the {preset} preset's shipped folders hold {total / 1e6:.1f} MB (at most {bound / 1e6:.0f})"
    return manifests
