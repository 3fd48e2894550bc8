"""What the GPU session brings back, checked and taken in: the GPU machine's return limits, the T4 estimate
from the session's own measurements, and the shipped models unpacked into cnet_lib/shipped/.

    python scripts/session_files.py accept FILES_AT [--dest cnet_lib/shipped] [--results benchmarks/results]

``accept`` reads the folder the device tool fetched ($OUT of scripts/gpu_session.sh): it checks the
limits, extracts ``shipped-<preset>.tar`` into a temporary folder, verifies every shipped folder against
its manifest (the same check a reader's install makes) and against the current preset (its identity hash),
then replaces ``<dest>/<preset>-<run>/`` and copies gpu_session.json, chapters.json and live_apps.json into
the results folder as gpu_session-<preset>.json, gpu_chapters-<preset>.json and live_apps-<device>.json.  A
session that reused the shipped models (``"reused"`` in its summary, no tar) installs nothing and is kept as
gpu_session-<preset>-check.json and gpu_chapters-<preset>-check.json (the training record stays).  It prints
the session's summary (the book's pages read the kept files from `benchmarks/results/`).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cnet_lib.runtime import gpu_estimate  # noqa: E402  (cnet_lib from this checkout)

MAX_FILES, MAX_BYTES, MAX_TOTAL = 8, 16 * 2**20, 64 * 2**20
"""The GPU machine's return limits: 8 files, 16 MiB each, 64 MiB together (the device tool's README)."""
NAME = re.compile(r"^[A-Za-z0-9._-]+$")
SHIPPED_MAX_BYTES = 12_000_000
"""The gpu preset's shipped folders together (issue 24: under 12 MB)."""


def check_out_limits(out: Path) -> list:
    """``[(name, bytes)]`` of every file under ``out``, after checking the return limits: at most 8 files,
    each at most 16 MiB and 64 MiB together, no folder more than two levels down, names of letters,
    digits, '.', '_' and '-'.  A ValueError says which limit is broken."""
    files = sorted(p for p in Path(out).rglob("*") if p.is_file())
    rows = []
    for p in files:
        rel = p.relative_to(out)
        if len(rel.parts) > 3 or not all(NAME.match(part) for part in rel.parts):
            raise ValueError(f"{rel} would not come back from the GPU machine (a name of other characters, or too deep)")
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise ValueError(f"{rel} is {size / 2**20:.1f} MiB: over the 16 MiB a file may have")
        rows.append((str(rel), size))
    if len(rows) > MAX_FILES:
        raise ValueError(f"{len(rows)} files in {out}: at most {MAX_FILES} come back ({[r[0] for r in rows]})")
    if sum(size for _, size in rows) > MAX_TOTAL:
        raise ValueError(f"{out} holds more than 64 MiB")
    return rows


def t4_estimate(summary: dict) -> dict:
    """Minutes a T4 would take for the image chapters of the preset, from the session's seed 0: each run's
    training (its history's seconds), evaluation and sweep, by :func:`cnet_lib.runtime.gpu_estimate.t4_estimate`
    (its assumptions stated there); ``{}`` without seed 0."""
    seed0 = summary.get("seeds", {}).get("0")
    if not seed0:
        return {}
    runs = {name: {"train": sum(h["train_seconds"] for h in history),
                   "eval": sum(h.get("eval_seconds", 0.0) for h in history),
                   "sweep": seed0["study_seconds"].get(f"sweep {name}") or 0.0}
            for name, history in seed0["history"].items()}
    return gpu_estimate.t4_estimate(runs, summary.get("machine", {}).get("device_name"))


def _verified_folders(tar_path: Path, tmp: Path, max_bytes: int) -> list:
    """The shipped folders of ``tar_path``, extracted into ``tmp`` and checked: their manifests' SHA-256,
    the preset's current identity hash, and their total size."""
    from cnet_lib.images.runs.image_presets import image_runs
    from cnet_lib.images.runs.run_folders import identity_hash
    from cnet_lib.images.runs.shipped import verify_shipped

    with tarfile.open(tar_path) as tar:
        tar.extractall(tmp, filter="data")
    folders = sorted(p for p in tmp.iterdir() if p.is_dir())
    total = 0
    for folder in folders:
        manifest = verify_shipped(folder)
        cfg = image_runs(manifest["preset"])[manifest["run"]]
        if manifest["identity_hash"] != identity_hash(cfg):
            raise ValueError(f"{folder.name} was trained for another {manifest['preset']} preset than this checkout's "
                             "(its identity hash differs): run the GPU session again with this checkout")
        total += sum(p.stat().st_size for p in folder.iterdir())
    if total > max_bytes:
        raise ValueError(f"the shipped folders hold {total / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB allowed")
    return folders


def accept(files_at: Path, dest: Path, results: Path, max_bytes: int = SHIPPED_MAX_BYTES) -> dict:
    """Take in a session's files (see the module docstring); returns the session summary."""
    check_out_limits(files_at)
    summary = json.loads((files_at / "gpu_session.json").read_text())
    preset = summary["preset"]
    tar_path = files_at / f"shipped-{preset}.tar"
    if summary.get("reused"):  # a session that reused the shipped models: nothing to install, keep the training record
        name = f"gpu_session-{preset}-check.json"
    elif not tar_path.is_file():
        raise FileNotFoundError(f"{tar_path} is missing: the session did not ship seed 0 (see its stages)")
    else:
        name = f"gpu_session-{preset}.json"
        with tempfile.TemporaryDirectory() as tmp:
            folders = _verified_folders(tar_path, Path(tmp), max_bytes)
            dest.mkdir(parents=True, exist_ok=True)
            for folder in folders:
                target = dest / folder.name
                if target.exists():
                    shutil.rmtree(target)
                shutil.copytree(folder, target)
    results.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(files_at / "gpu_session.json", results / name)
    if (files_at / "chapters.json").is_file():
        shutil.copyfile(files_at / "chapters.json", results / name.replace("gpu_session", "gpu_chapters"))
    import torch

    if (files_at / "pendulum_batched.json").is_file():
        record = json.loads((files_at / "pendulum_batched.json").read_text())
        if not record.get("dry_run"):  # a dry run's numbers are not measurements
            kind = torch.device(record.get("device", "cuda")).type
            shutil.copyfile(files_at / "pendulum_batched.json", results / f"pendulum_batched-{record['preset']}-{kind}.json")
    if (files_at / "live_apps.json").is_file():
        device = torch.device(json.loads((files_at / "live_apps.json").read_text()).get("device", "cuda"))
        # named by the device's type, as benchmarks/bench_live_apps.py names it ("cuda:0" -> live_apps-cuda.json)
        shutil.copyfile(files_at / "live_apps.json", results / f"live_apps-{device.type}.json")
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["accept"])
    p.add_argument("files_at")
    p.add_argument("--dest", default=str(ROOT / "cnet_lib" / "shipped"))
    p.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    summary = accept(Path(args.files_at), Path(args.dest), Path(args.results))
    print(json.dumps({k: summary.get(k) for k in ("machine", "stages", "shipped", "t4_estimate", "chapters")}, indent=1))
    print("\n".join(summary.get("over_seeds", {}).get("contrast_words", [])))
    print(summary.get("over_seeds", {}).get("robustness_words", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
