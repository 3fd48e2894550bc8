"""What the GPU session has trained and what is still missing, kept across GPU commands (issue 45).

The work is cut into *units*: one training seed of one run (:class:`Unit`), the preset's main runs first (seeds 0, 1,
2: each trained, stored as it ships in float16, swept, and studied for robustness and adaptive steps), then its
control runs' (each trained, stored so and swept).  A finished unit leaves its numbers in its seed's record (the
seeds file's format, :mod:`cnet_lib.images.studies.seed_cached`: checkpoint SHA-256, accuracy, training time, sweep
rows, robustness conditions, adaptive-step rows); seed 0's main runs leave their shipped folders too.  A GPU command
brings back every record it knows (``seeds-<preset>.json``) and seed 0's folders within the machine's return limits;
``scripts/session_files.py accept`` keeps them in the state folder (``gpu_state/``, ignored by git, carried to the
next command) until the recipe's three seeds per main run are done, and then installs the folders and the records in
``cnet_lib/shipped/`` and switches the preset to the recipe (:func:`switch_recipe`).  The next command reads what the
state folder and the shipped models hold and trains only the units missing (:func:`missing_units`).

The ``gpu`` preset's recipe in force is :data:`cnet_lib.images.runs.image_presets.GPU_RECIPE`; the session trains
:data:`~cnet_lib.images.runs.image_presets.NEXT_GPU_RECIPE`'s models, in its own process, with that recipe put in
force there (:func:`recipe_in_force`), so that every run's identity, folder and study is the new recipe's.
"""
from __future__ import annotations

import contextlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from cnet_lib.images.runs import image_presets as IP  # noqa: E402
from cnet_lib.images.runs import shipped as SHP  # noqa: E402
from cnet_lib.images.runs.run_folders import identity_hash  # noqa: E402
from cnet_lib.images.studies.robustness_cached import ROBUSTNESS_GRAPHS  # noqa: E402
from cnet_lib.images.studies.seed_cached import (SEEDS_FILE, merge_seed_records, read_seeds_file,  # noqa: E402
                                                 write_seeds_file)

STATE = ROOT / "gpu_state"
"""The folder that keeps a recipe's finished units between GPU commands (``accept`` writes it, the next command
carries it): every record, :data:`HELD`, and a seed-0 folder whose partner has not been shipped with it yet."""
MODELS = ROOT / "gpu_state_models"
"""Where ``accept`` keeps seed 0's two folders once they were shipped together, until the recipe's switch installs
them: not carried (a GPU command needs them no more, and the checkout, the data pack and two 64-128-256 models
would pass the 64 MiB that travels)."""
HELD = "seed0.json"
"""In the state folder: the seed-0 folders ``accept`` holds (run -> identity hash, checkpoint SHA-256, whether shipped
with its partner, where), so that a command which does not carry them knows they are done."""
PRESETS_FILE = Path(IP.__file__)
"""The file whose ``GPU_RECIPE = "..."`` line :func:`switch_recipe` rewrites."""
WEIGHTS = "float16"
"""How the session stores the weights it ships (a 64-128-256 model: 14.7 MB, under the 16 MiB a file may have)."""


@dataclass(frozen=True)
class Unit:
    """One training seed of one run: a main run (``main``: swept, studied for robustness and adaptive steps) or a
    control run (swept)."""

    seed: int
    run: str
    main: bool

    @property
    def name(self) -> str:
        return f"{self.run} seed {self.seed}"


def recipes(preset: str) -> tuple[Optional[str], Optional[str]]:
    """``(the recipe in force, the next recipe)`` of ``preset`` (names of
    :data:`cnet_lib.images.runs.image_presets.GPU_RECIPES`), ``(None, None)`` for a preset without recipes."""
    if preset != "gpu":
        return None, None
    return IP.GPU_RECIPE, IP.NEXT_GPU_RECIPE


def target_recipe(preset: str, asked: str = "auto") -> Optional[str]:
    """The recipe a session trains: ``asked`` (``auto``: the next recipe where it differs from the one in force,
    else the one in force; ``current``; or a recipe's name).  ``None`` for a preset without recipes."""
    current, nxt = recipes(preset)
    if current is None:
        if asked not in ("auto", "current"):
            raise ValueError(f"the {preset} preset has no recipes; give --recipe auto or current")
        return None
    if asked == "auto":
        return nxt or current
    if asked == "current":
        return current
    if asked not in IP.GPU_RECIPES:
        raise ValueError(f"no recipe {asked!r} of the {preset} preset; its recipes are {', '.join(IP.GPU_RECIPES)}")
    return asked


@contextlib.contextmanager
def recipe_in_force(preset: str, recipe: Optional[str]) -> Iterator[None]:
    """Inside, ``preset`` takes ``recipe`` in this process (its data, training recipe, runs and controls; its grids
    stay): what the session trains and studies.  ``None``, or the recipe already in force, changes nothing."""
    if recipe is None or recipe == recipes(preset)[0]:
        yield
        return
    saved = IP.IMAGE_PRESETS[preset]
    IP.IMAGE_PRESETS[preset] = {**saved, **IP.GPU_RECIPES[recipe]}
    try:
        yield
    finally:
        IP.IMAGE_PRESETS[preset] = saved


def identities(preset: str) -> dict:
    """``{run: identity hash}`` of every run of ``preset`` as it stands (its controls too): what a record, a shipped
    folder or a state folder must have been made for."""
    return {run: identity_hash(cfg) for run, cfg in IP.image_runs(preset, controls=True).items()}


def plan(preset: str, seeds) -> list:
    """Every unit of ``preset``, in the order they are trained: each seed's main runs, then each seed's controls."""
    runs = list(IP.image_runs(preset))
    controls = [r for r in IP.image_runs(preset, controls=True) if r not in runs]
    return [Unit(k, r, True) for k in seeds for r in runs] + [Unit(k, r, False) for k in seeds for r in controls]


def robustness_labels(run: str) -> list:
    """The robustness study's labels of ``run`` (its own graph, and Euler's model on RK4-classic's)."""
    return [label for label, graph in ROBUSTNESS_GRAPHS.items() if graph[0] == run]


def unit_done(unit: Unit, records: dict) -> bool:
    """Whether ``records`` (seed -> record) hold all of ``unit``'s numbers: its run and sweep, and for a main run its
    robustness conditions and adaptive-step rows."""
    rec = records.get(unit.seed)
    if not rec or unit.run not in rec.get("runs", {}) or unit.run not in rec.get("sweeps", {}):
        return False
    if not unit.main:
        return True
    return all(label in (rec.get("robustness") or {}) for label in robustness_labels(unit.run)) \
        and unit.run in (rec.get("adaptive") or {})


def missing_units(units, records: dict, seed0_folders) -> list:
    """The units of ``units`` still to train: not done in ``records``, or seed 0 of a main run without its shipped
    folder (``seed0_folders``: the runs that have one)."""
    return [u for u in units if not unit_done(u, records) or (u.main and u.seed == 0 and u.run not in seed0_folders)]


def by_seed(records) -> dict:
    """``{seed: record}`` of a list of records (joined: :func:`merge_seed_records`)."""
    return {r["seed"]: r for r in merge_seed_records(list(records))}


def records_name(preset: str) -> str:
    """The name of the file of every record a session knows (in its output and in the state folder)."""
    return f"seeds-{preset}.json"


def read_records(path: Path, identity: dict, say=print) -> list:
    """The records of the seeds file ``path`` when it was written for ``identity`` (every run's identity hash),
    else none (said through ``say`` when the file is there)."""
    payload = read_seeds_file(path)
    if payload is None:
        if Path(path).exists():
            say(f"{path} is not a whole seeds file: its records are not used")
        return []
    if payload.get("identity") != identity:
        say(f"{path} was written for other runs (another recipe): its records are not used")
        return []
    return list(payload["seeds"])


def write_records(path: Path, records, preset: str, identity: dict, environment: dict) -> Path:
    """Every record of ``records`` (joined seed by seed) in the seeds file ``path``, with ``identity``."""
    return write_seeds_file(path, merge_seed_records(list(records)), preset, environment, identity=identity)


def folder_matches(folder: Path, identity: dict) -> bool:
    """Whether ``folder`` is a shipped folder (its manifest verified) of a run of ``identity``."""
    if not (folder / SHP.MANIFEST).is_file():
        return False
    try:
        manifest = SHP.verify_shipped(folder)
    except (SHP.ShippedFileError, OSError):
        return False
    return identity.get(manifest.get("run")) == manifest.get("identity_hash")


def seed0_folders(preset: str, identity: dict, *places: Path) -> dict:
    """``{run: folder}`` of the main runs' seed-0 shipped folders of ``identity`` found in ``places`` (the first
    place that has one wins)."""
    out = {}
    for run in IP.image_runs(preset):
        for place in places:
            folder = Path(place) / f"{preset}-{run}"
            if run not in out and folder_matches(folder, identity):
                out[run] = folder
    return out


def held_runs(state: Optional[Path], identity: dict) -> dict:
    """``{run: entry}`` of the state folder's :data:`HELD` list whose identity hashes are ``identity``'s."""
    try:
        held = json.loads((Path(state) / HELD).read_text()) if state else {}
    except (OSError, ValueError):
        return {}
    return {run: e for run, e in held.items() if isinstance(e, dict) and identity.get(run) == e.get("identity_hash")}


def write_held(state: Path, folders: dict) -> None:
    """The state folder's :data:`HELD` list of ``folders`` (run -> seed-0 folder), removed when there is none."""
    path = Path(state) / HELD
    if not folders:
        path.unlink(missing_ok=True)
        return
    paired = pair_shipped(folders)
    entries = {}
    for run, folder in folders.items():
        manifest = json.loads((folder / SHP.MANIFEST).read_text())
        entries[run] = {"identity_hash": manifest["identity_hash"], "checkpoint_sha256": manifest["files"]["checkpoint.pt"],
                        "shipped_with_its_partner": paired, "held_in": str(folder.parent.name)}
    path.write_text(json.dumps(entries, indent=1))


def shipped_records(preset: str, identity: dict, dest: Path = SHP.SHIPPED) -> list:
    """The records of the seeds file shipped with ``preset``'s models in ``dest`` when those models are
    ``identity``'s."""
    folder = Path(dest) / f"{preset}-rk4_refined"
    if not folder_matches(folder, identity):
        return []
    payload = read_seeds_file(folder / SEEDS_FILE)
    return list(payload["seeds"]) if payload else []


RECIPE_LINE = re.compile(r'^GPU_RECIPE = "([^"]+)"$', re.MULTILINE)


def switch_recipe(recipe: str, presets_file: Path = PRESETS_FILE) -> str:
    """Rewrite the ``GPU_RECIPE = "..."`` line of ``presets_file`` to ``recipe`` (a name of
    :data:`cnet_lib.images.runs.image_presets.GPU_RECIPES`); returns the recipe it held."""
    if recipe not in IP.GPU_RECIPES:
        raise ValueError(f"no recipe {recipe!r}; the recipes are {', '.join(IP.GPU_RECIPES)}")
    text = Path(presets_file).read_text()
    found = RECIPE_LINE.findall(text)
    if len(found) != 1:
        raise ValueError(f"{presets_file} holds {len(found)} lines GPU_RECIPE = \"...\", not one: switch it by hand")
    Path(presets_file).write_text(RECIPE_LINE.sub(f'GPU_RECIPE = "{recipe}"', text))
    return found[0]


def pair_shipped(folders: dict) -> bool:
    """Whether seed 0's main runs were shipped together: both folders, the first holding robustness and adaptive
    studies keyed by both checkpoints (the files a chapter reads)."""
    if set(folders) != {"rk4_refined", "euler_fixed"}:
        return False
    first = folders["rk4_refined"]
    names = json.loads((first / SHP.MANIFEST).read_text())["files"]
    digests = {run: json.loads((f / SHP.MANIFEST).read_text())["files"]["checkpoint.pt"][:12] for run, f in folders.items()}
    paired = {prefix for name in names for prefix in ("robustness-", "adaptive-")
              if name.startswith(prefix) and json.loads((first / name).read_text()).get("key", {}).get("checkpoints") == digests}
    return paired == {"robustness-", "adaptive-"}
