"""What the GPU session brings back, checked and taken in: the GPU machine's return limits, the T4 estimate from the
session's own measurements, and what it trained, kept until the next command and installed in cnet_lib/shipped/.

    python scripts/session_files.py accept FILES_AT [--dest cnet_lib/shipped] [--results benchmarks/results]
                                                    [--state gpu_state] [--models gpu_state_models]
    python scripts/session_files.py carry [--with-wheels]    # what the next GPU command carries, and its MiB


``accept`` reads the folder the device tool fetched ($OUT of scripts/gpu_session.sh) and checks the return limits.
From a session that trained (:func:`take_units`) it checks that the runs it trained are those of the recipe this
checkout names (their identity hashes), verifies every shipped folder of ``shipped-<preset>-<run>.tar`` against its
manifest (the same check a reader's install makes), and keeps every unit's record (``seeds-<preset>.json``) and seed
0's folders in the state folder (``gpu_state/``: the next command carries it and trains only what is missing; once
seed 0's two runs were shipped together they wait in ``gpu_state_models/``, which is not carried, and the state
folder's ``seed0.json`` says they are done).  When the recipe is the preset's own, or, for the next recipe, once its main runs' three seeds are done and seed 0's were
shipped together, the folders go into ``<dest>/<preset>-<run>/`` with every record in ``seeds.json``, and the preset
is switched to the recipe (its ``GPU_RECIPE`` line): models and preset change together.  The session's summary is
kept as ``gpu_session-<preset>[-<recipe>]-<k>.json`` (k counts the commands), its checks as
``gpu_chapters-<preset>-check.json``, ``live_apps-<device>.json`` and ``pendulum_batched-<preset>-<device>.json``,
and a GPU's throughput candidates as ``gpu_throughput-<gpu>.json``.  A session that trained nothing installs
nothing and is kept as ``gpu_session-<preset>-check.json``.  It prints what was done and the session's summary (the
book's pages read the kept files from `benchmarks/results/`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import session_state as SS  # noqa: E402
from cnet_lib.runtime import gpu_estimate  # noqa: E402  (cnet_lib from this checkout)

MAX_FILES, MAX_BYTES, MAX_TOTAL = 8, 16 * 2**20, 64 * 2**20
"""The GPU machine's return limits: 8 files, 16 MiB each, 64 MiB together (the device tool's README)."""
NAME = re.compile(r"^[A-Za-z0-9._-]+$")


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


def _verified_folders(tars, tmp: Path, identity: dict, max_bytes: int = MAX_BYTES) -> dict:
    """``{run: folder}`` of the shipped folders in ``tars``, extracted into ``tmp`` and checked: their manifests'
    SHA-256, the identity hash of the runs the session trained (``identity``: what this checkout computes for its
    recipe), and each folder's size (at most ``max_bytes``: what one file brings back)."""
    from cnet_lib.images.runs.shipped import verify_shipped

    out = {}
    for tar_path in tars:
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
    for folder in sorted(p for p in tmp.iterdir() if p.is_dir()):
        manifest = verify_shipped(folder)
        if identity.get(manifest["run"]) != manifest["identity_hash"]:
            raise ValueError(f"{folder.name} was trained for another {manifest['preset']} recipe than the session says "
                             "(its identity hash differs): run the GPU session again with this checkout")
        size = sum(p.stat().st_size for p in folder.iterdir())
        if size > max_bytes:
            raise ValueError(f"{folder.name} holds {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB allowed")
        out[manifest["run"]] = folder
    return out


def _replace_folder(src: Path, target: Path) -> None:
    """``target`` replaced by a copy of ``src`` (written beside it first, then moved into place)."""
    stage = target.with_name(f".{target.name}.accepting")
    if stage.exists():
        shutil.rmtree(stage)
    shutil.copytree(src, stage)
    if target.exists():
        shutil.rmtree(target)
    os.replace(stage, target)


def _put_seeds_file(folder: Path, records, preset: str, identity: dict, machine: dict) -> None:
    """Every record of ``records`` in ``folder``'s seeds.json, and its SHA-256 in the folder's manifest."""
    from cnet_lib.images.runs.shipped import MANIFEST
    from cnet_lib.images.studies.seed_cached import SEEDS_FILE
    from cnet_lib.runtime.checkpoint import atomic_write_text, file_digest

    SS.write_records(folder / SEEDS_FILE, records, preset, identity, machine)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"][SEEDS_FILE] = file_digest(folder / SEEDS_FILE)
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1))


def take_units(files_at: Path, summary: dict, dest: Path, state: Path, presets_file: Path = SS.PRESETS_FILE,
               models: Path = SS.MODELS) -> dict:
    """Take in what a training session finished (module doc): check that it trained what this checkout calls its
    recipe, verify its shipped folders, keep every record in ``state`` and seed 0's folders there until they are
    shipped together (then in ``models``, which is not carried); install the folders and the records in ``dest`` at
    once when the recipe is the preset's, else once the recipe's main runs are done for every seed and seed 0's were
    shipped together, and then switch the preset to it (:func:`session_state.switch_recipe`).  Returns what was
    done."""
    preset, recipe, identity = summary["preset"], summary.get("recipe"), summary["identity"]
    with SS.recipe_in_force(preset, recipe):
        mine = SS.identities(preset)
        units = SS.plan(preset, summary["units"]["seeds"])
    if mine != identity:
        raise ValueError(f"the session trained other runs than this checkout's {recipe or preset} recipe (their identity "
                         "hashes differ): run the GPU session again with this checkout")
    state.mkdir(parents=True, exist_ok=True)
    records = [*SS.read_records(state / SS.records_name(preset), identity),
               *SS.read_records(files_at / SS.records_name(preset), identity)]
    with tempfile.TemporaryDirectory() as tmp:
        for folder in _verified_folders(sorted(files_at.glob(f"shipped-{preset}-*.tar")), Path(tmp), identity).values():
            _replace_folder(folder, state / folder.name)
    machine = summary.get("machine") or {}
    if records:
        SS.write_records(state / SS.records_name(preset), records, preset, identity, machine)
    by_seed = SS.by_seed(records)
    current = recipe is None or recipe == SS.recipes(preset)[0]
    pair = SS.seed0_folders(preset, identity, state)
    if not current and SS.pair_shipped(pair):  # shipped together: no command needs them until the switch
        for folder in pair.values():
            _replace_folder(folder, models / folder.name)
            shutil.rmtree(folder)
    kept = SS.seed0_folders(preset, identity, state, models)
    ready = current or (not any(u.main for u in SS.missing_units(units, by_seed, kept)) and SS.pair_shipped(kept))
    done = {"installed": [], "switched": None}
    if ready:
        for folder in kept.values():  # into the book, then out of the folders that wait
            _replace_folder(folder, dest / folder.name)
            shutil.rmtree(folder)
            done["installed"].append(folder.name)
        book = SS.seed0_folders(preset, identity, dest)
        if records and "rk4_refined" in book:
            _put_seeds_file(book["rk4_refined"], records, preset, identity, machine)
            done["installed"].append(f"{book['rk4_refined'].name}/seeds.json")
        if not current and done["installed"]:
            done["switched"] = f"{SS.switch_recipe(recipe, presets_file)} -> {recipe}"
    waiting = SS.seed0_folders(preset, identity, state, models)
    SS.write_held(state, waiting)
    folders = {**SS.seed0_folders(preset, identity, dest), **waiting}
    done["missing"] = [u.name for u in SS.missing_units(units, by_seed, folders)]
    done["kept_in_state"] = sorted(p.name for p in state.iterdir())
    done["waiting_in_models"] = sorted(p.name for p in models.iterdir()) if models.is_dir() else []
    return done


def _next_free(results: Path, stem: str) -> str:
    k = 1
    while (results / f"{stem}-{k}.json").exists():
        k += 1
    return f"{stem}-{k}.json"


def accept(files_at: Path, dest: Path, results: Path, state: Path = SS.STATE,
           presets_file: Path = SS.PRESETS_FILE, models: Path = SS.MODELS) -> dict:
    """Take in a session's files (see the module docstring); returns the session summary, with what was done in
    ``"accepted"``."""
    check_out_limits(files_at)
    summary = json.loads((files_at / "gpu_session.json").read_text())
    preset = summary["preset"]
    results.mkdir(parents=True, exist_ok=True)
    trained = bool(summary.get("units", {}).get("trained")) or any(files_at.glob(f"shipped-{preset}-*.tar"))
    if trained:
        summary["accepted"] = take_units(files_at, summary, dest, state, presets_file, models)
        recipe = summary.get("recipe")
        name = _next_free(results, f"gpu_session-{preset}" + (f"-{recipe}" if recipe else ""))
    else:  # a session that trained nothing: nothing to install, the training records stay
        name = f"gpu_session-{preset}-check.json"
    (results / name).write_text(json.dumps(summary, indent=1, default=str))
    if (files_at / "chapters.json").is_file():
        shutil.copyfile(files_at / "chapters.json", results / f"gpu_chapters-{preset}-check.json")
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
    if (files_at / "throughput.json").is_file():
        record = json.loads((files_at / "throughput.json").read_text())
        if not record.get("dry_run"):
            gpu = re.sub(r"[^a-z0-9]+", "-", str(record.get("machine", {}).get("cuda") or "gpu").lower()).strip("-")
            shutil.copyfile(files_at / "throughput.json", results / f"gpu_throughput-{gpu}.json")
    return summary


CARRY_LIMIT = 64 * 2**20
"""What travels to the GPU machine: the working tree (tracked and untracked-not-ignored files) and the carried paths."""


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) if path.is_dir() else 0


def carry(root: Path = ROOT, wheels: bool = False) -> dict:
    """What the next GPU command carries and how much travels: the working tree (``git ls-files`` of tracked and
    untracked-not-ignored files), ``shared_pack``, ``gpu_state`` and, for the checks, ``.whl``; over 64 MiB the device
    tool refuses the call."""
    import subprocess

    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True,
                            check=True).stdout.split(b"\0")
    tree = sum((root / name.decode()).stat().st_size for name in listed if name and (root / name.decode()).is_file())
    paths = ["shared_pack", SS.STATE.name] + ([".whl"] if wheels else [])
    sizes = {"working tree": tree, **{name: _bytes(root / name) for name in paths}}
    missing = [name for name in paths if not (root / name).exists() and name != SS.STATE.name]
    total = sum(sizes.values())
    return {"carry": [name for name in paths if (root / name).exists()], "missing": missing,
            "MiB": {k: round(v / 2**20, 2) for k, v in sizes.items()}, "total_MiB": round(total / 2**20, 2),
            "fits": total <= CARRY_LIMIT}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["accept", "carry"])
    p.add_argument("files_at", nargs="?", help="accept: the folder the device tool fetched")
    p.add_argument("--with-wheels", action="store_true", help="carry: the checks' wheels (.whl) too")
    p.add_argument("--dest", default=str(ROOT / "cnet_lib" / "shipped"))
    p.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--state", default=str(SS.STATE), help="the folder the next GPU command carries (default gpu_state/)")
    p.add_argument("--models", default=str(SS.MODELS),
                   help="where seed 0's models shipped together wait for the switch, not carried (default gpu_state_models/)")
    args = p.parse_args(argv)
    if args.what == "carry":
        report = carry(wheels=args.with_wheels)
        print(json.dumps(report, indent=1))
        return 0 if report["fits"] and not report["missing"] else 1
    if not args.files_at:
        p.error("accept needs the folder the device tool fetched (files_at)")
    summary = accept(Path(args.files_at), Path(args.dest), Path(args.results), Path(args.state),
                     models=Path(args.models))
    print(json.dumps({k: summary.get(k) for k in ("machine", "stages", "accepted", "shipped", "t4_estimate", "chapters")},
                     indent=1))
    print("\n".join(summary.get("over_seeds", {}).get("contrast_words", [])))
    print(summary.get("over_seeds", {}).get("robustness_words", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
