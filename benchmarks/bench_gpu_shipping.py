"""What shipping the `gpu` preset's models costs (issue 45, item 4): the bytes of a shipped checkpoint in each storage,
what rounding the weights changes, the wheel a reader installs, and a Colab-like install of it.

* **checkpoints**: every image model shipped in ``cnet_lib/shipped/`` and the next recipe's 64-128-256 ContinuousNet
  at its final M = 4 (built, not trained: its size does not depend on training), each as the training checkpoint it
  ships today and as the weights alone (:data:`cnet_lib.images.training.train_state.SHIPPED_EXTRA`) in float32,
  float16 and bfloat16 (:func:`cnet_lib.runtime.checkpoint.save_checkpoint`).
* **rounding**: the shipped models on the first ``--images`` held-out images of ``CNET_DATA_DIR`` (float32
  evaluation on the CPU): the predictions that change when the weights are rounded to float16 or bfloat16, and the
  accuracies.
* **wheel**: the wheel of this checkout, built as a class's export builds it
  (:func:`cnet_lib.book.student_wheel.build_wheel`), its bytes and its shipped models' compressed bytes; and the same
  wheel with the `gpu` preset's two checkpoints replaced by 64-128-256 float16 ones of the same layout (untrained
  stand-ins: their bytes are what the trained ones will weigh), the wheel once the next recipe ships.
* **install**: a fresh virtual environment that already holds Colab-like packages (the pins of
  ``tests/test_colab_rehearsal.py``, torch among them, installed first and not timed), then the wall time of
  ``pip install -q --no-cache-dir <wheel>`` and of ``pip install -q --no-cache-dir "cnet-lib @ git+file://<this
  checkout>"`` (a Colab chapter's install line, cloned from this repository instead of GitHub: no network time),
  each ``--repeats`` times with the package uninstalled between and no cache, as a fresh runtime's first install;
  the install must change none of the packages already there.

    CNET_DATA_DIR=/work/shared/data python benchmarks/bench_gpu_shipping.py            # benchmarks/results/gpu_shipping.json
    python benchmarks/bench_gpu_shipping.py --skip-install --out /tmp/shipping.json    # without the venv (seconds)

The machine and its load average before and after are recorded; installs on a loaded machine take longer.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine  # noqa: E402

from cnet_lib.book.student_wheel import build_wheel, copy_sources, project_version  # noqa: E402
from cnet_lib.core.models import ContinuousNet  # noqa: E402
from cnet_lib.images.data.batches import iterate_batches  # noqa: E402
from cnet_lib.images.data.image_data import TEST_SUBSET_SEED, load_dataset  # noqa: E402
from cnet_lib.images.runs.image_presets import GPU_RECIPES, NEXT_GPU_RECIPE  # noqa: E402
from cnet_lib.images.runs.shipped import SHIPPED  # noqa: E402
from cnet_lib.images.training.train_state import CHECKPOINT, SHIPPED_EXTRA, load_model  # noqa: E402
from cnet_lib.runtime.checkpoint import WEIGHTS, load_checkpoint, rounded_weights, save_checkpoint  # noqa: E402
from cnet_lib.runtime.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def _sizes(model_state: dict, config: dict, extra: dict, tmp: Path) -> dict:
    out = {}
    for weights in WEIGHTS:
        path = tmp / f"{weights}.pt"
        save_checkpoint(path, model_state, config, extra, weights=weights)
        out[weights] = path.stat().st_size
    return out


def next_recipe_model() -> ContinuousNet:
    """The next recipe's ContinuousNet at its final graph (M = N_t = 4), untrained."""
    channels = GPU_RECIPES[NEXT_GPU_RECIPE]["common"]["channels"]
    return ContinuousNet(channels=channels, n_basis=4, scheme="rk4_classic")


def checkpoints() -> dict:
    """``{"shipped": {folder: bytes ...}, "next_recipe": {...}}``: each shipped image model's checkpoint as it ships
    and its weights alone in each storage; the next recipe's model (built, untrained) likewise."""
    out = {"shipped": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for folder in sorted(p for p in SHIPPED.iterdir() if (p / CHECKPOINT).is_file()):
            ck = load_checkpoint(folder / CHECKPOINT, map_location="cpu")
            extra = {k: ck["extra"][k] for k in SHIPPED_EXTRA}
            n = sum(t.numel() for t in ck["model"].values() if torch.is_tensor(t) and t.is_floating_point())
            out["shipped"][folder.name] = {"floats": n, "as_shipped": (folder / CHECKPOINT).stat().st_size,
                                           "weights_only": _sizes(ck["model"], ck["config"], extra, Path(tmp))}
        model = next_recipe_model()
        extra = {"epoch": 40, "history": [{"epoch": e + 1} for e in range(40)], "model_config": model.config(),
                 "manifestation": [list(m) for m in model.manifestation], "run_config": {}, "environment": {},
                 "started_utc": ""}
        out["next_recipe"] = {"recipe": NEXT_GPU_RECIPE, "model": "built, not trained (M = N_t = 4)",
                              "parameters": model.n_parameters(),
                              "weights_only": _sizes(model.state_dict(), {}, extra, Path(tmp))}
    return out


@torch.no_grad()
def rounding(n_images: int) -> dict:
    settings = Settings.from_environment()
    data = load_dataset("cifar10", settings.data_dir, 256, n_images, seed=0, device="cpu", progress=False,
                        test_seed=TEST_SUBSET_SEED)

    def predictions(model):
        return torch.cat([model(xb).argmax(1) for xb, _ in iterate_batches(data.test_x, None, 250, data.mean, data.std)])

    out = {"images": len(data.test_y), "data": "the held-out images of CNET_DATA_DIR (the first of a balanced subset)",
           "models": {}}
    for folder in sorted(p for p in SHIPPED.iterdir() if (p / CHECKPOINT).is_file()):
        model, _ = load_model(folder, "cpu")
        p32 = predictions(model)
        row = {"float32_accuracy": (p32 == data.test_y).double().mean().item()}
        for weights in ("float16", "bfloat16"):
            rounded, _ = load_model(folder, "cpu")
            rounded.load_state_dict({k: v.float() if torch.is_tensor(v) and v.is_floating_point() else v
                                     for k, v in rounded_weights(rounded.state_dict(), weights).items()})
            p = predictions(rounded.eval())
            row[weights] = {"changed": int((p != p32).sum()), "accuracy": (p == data.test_y).double().mean().item()}
        out["models"][folder.name] = row
        print(f"  {folder.name}: float16 changes {row['float16']['changed']}, bfloat16 {row['bfloat16']['changed']} "
              f"of {len(p32)} predictions", flush=True)
    return out


def _shipped_bytes(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        infos = [i for i in z.infolist() if "/shipped/" in i.filename]
    return {"files": len(infos), "bytes": sum(i.file_size for i in infos), "compressed": sum(i.compress_size for i in infos)}


def wheels(tmp: Path) -> dict:
    version = project_version(ROOT)
    today = build_wheel(ROOT, version, tmp / "today")
    # the same sources with the gpu preset's checkpoints replaced by 64-128-256 float16 ones of the same layout
    src = tmp / "next-src"
    copy_sources(ROOT, src)
    torch.manual_seed(0)
    model = next_recipe_model()
    for folder in sorted((src / "cnet_lib" / "shipped").glob("gpu-*")):
        ck = load_checkpoint(folder / CHECKPOINT, map_location="cpu")
        extra = {k: ck["extra"][k] for k in SHIPPED_EXTRA}
        save_checkpoint(folder / CHECKPOINT, model.state_dict(), ck["config"], extra, weights="float16")
    nxt = build_wheel(src, version, tmp / "next")
    return {"today": {"bytes": today.stat().st_size, "shipped": _shipped_bytes(today), "name": today.name},
            "with_next_recipe": {"bytes": nxt.stat().st_size, "shipped": _shipped_bytes(nxt),
                                         "note": "the gpu preset's two checkpoints replaced by 64-128-256 float16 "
                                                 "ones (untrained stand-ins of the same size)"},
            "path": today}


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return out


def _versions(python: Path) -> dict:
    out = _run([python, "-m", "pip", "list", "--format=json"]).stdout
    return {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(out)}


def colab_versions() -> dict:
    """The Colab-like pins of tests/test_colab_rehearsal.py (read from its source: one place for them)."""
    tree = ast.parse((ROOT / "tests" / "test_colab_rehearsal.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "COLAB_VERSIONS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("no COLAB_VERSIONS in tests/test_colab_rehearsal.py")


def install(wheel: Path, tmp: Path, repeats: int) -> dict:
    pins = colab_versions()
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    t0 = time.perf_counter()
    # a recent pip, as Colab has (the one a fresh venv brings may not read a git URL with a revision)
    _run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], timeout=600)
    _run([python, "-m", "pip", "install", "-q", *[f"{k}=={v}" for k, v in pins.items()]], timeout=1800)
    deps_s = time.perf_counter() - t0
    before = _versions(python)
    head = _run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    # --no-cache-dir: every install as a fresh Colab runtime's first (pip would reuse the wheel it built from the git
    # source the time before)
    lines = {"wheel": [python, "-m", "pip", "install", "-q", "--no-cache-dir", f"{wheel}[book]"],
             "git source": [python, "-m", "pip", "install", "-q", "--no-cache-dir", f"cnet-lib[book] @ git+file://{ROOT}@{head}"]}
    seconds = {k: [] for k in lines}
    for _ in range(repeats):
        for name, line in lines.items():
            t0 = time.perf_counter()
            _run(line, timeout=1800)
            seconds[name].append(time.perf_counter() - t0)
            after = _versions(python)
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)} - {"cnet-lib", "torchdiffeq"}
            if changed:
                raise RuntimeError(f"installing cnet-lib changed {sorted(changed)}")
            _run([python, "-m", "pip", "uninstall", "-q", "-y", "cnet-lib"])
    return {"python": _run([python, "-c", "import platform; print(platform.python_version())"]).stdout.strip(),
            "pip": _run([python, "-m", "pip", "--version"]).stdout.split()[1],
            "preinstalled": pins, "preinstall_seconds_not_timed_below": deps_s, "repeats": repeats,
            "commit": head, "seconds": seconds,
            "median_seconds": {k: statistics.median(v) for k, v in seconds.items()},
            "what": "pip install -q --no-cache-dir of the wheel, and of the git source (clone of this repository, build "
                    "in an isolated environment, install), into a venv that already holds the Colab-like pins; no "
                    "network (a local clone, the wheel on disk, the build's setuptools from the local package index)"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=RESULTS / "gpu_shipping.json")
    p.add_argument("--images", type=int, default=1000, help="held-out images for the rounding measurement")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-install", action="store_true")
    args = p.parse_args(argv)
    payload = {"benchmark": "bench_gpu_shipping", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
               "load_average": {"before": _load()}}
    t0 = time.perf_counter()
    payload["checkpoints"] = checkpoints()
    payload["rounding"] = rounding(args.images)
    with tempfile.TemporaryDirectory() as tmp:
        built = wheels(Path(tmp))
        wheel = built.pop("path")
        payload["wheel"] = built
        print(f"  wheel {wheel.name}: {built['today']['bytes'] / 2**20:.2f} MiB today, "
              f"{built['with_next_recipe']['bytes'] / 2**20:.2f} MiB with the next recipe in float16", flush=True)
        if not args.skip_install:
            payload["install"] = install(wheel, Path(tmp), args.repeats)
            print(f"  install: {payload['install']['median_seconds']}", flush=True)
    payload["load_average"]["after"] = _load()
    payload["total_seconds"] = time.perf_counter() - t0
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
