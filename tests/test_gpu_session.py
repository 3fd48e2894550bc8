"""``bash scripts/gpu_session.sh`` rehearsed on the CPU (``GPU_SESSION_DRY_RUN=1``, the ``smoke`` preset, a data pack),
resumable across GPU commands (issue 45).  Run 1 stops after seed 0's main runs (a deadline rehearsed,
``GPU_SESSION_STOP_AFTER``) and times the throughput candidates first; what it brings back fits the GPU machine's
return limits and ``scripts/session_files.py accept`` keeps it; run 2, on a fresh work folder with the state folder and
the shipped models run 1 left, trains only the rest (the control runs) and, with time and file room left, runs every
check.  In process, the `gpu` preset's next recipe is rehearsed at smoke size with two seeds: a first command stopped
after one run, a second that trains its partner and ships seed 0's pair, a third that carries no model and trains
seed 1, and ``accept`` switching the preset's recipe once the models are in.  The dry run's chapters are one pendulum and one image chapter;
the real one runs every chapter of _toc.yml, which chapters.json lists."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

from cnet_lib.book.toc import toc_notebooks
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.images.data.pack_writer import write_pack
from cnet_lib.images.runs import image_presets as IP
from cnet_lib.images.studies import seed_cached as SF
from shipped_checks import check_preset_folders

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_session  # noqa: E402
import session_files  # noqa: E402
import session_state as SS  # noqa: E402

pytestmark = pytest.mark.slow  # rehearses the GPU session's training path on the CPU

SEEDS = "0"  # one seed here, in CI's time; several seeds' records joining are rehearsed in process (two seeds)
RUN_1 = ["rk4_refined seed 0", "euler_fixed seed 0"]
RUN_2 = ["rk4_fixed seed 0", "euler_refined seed 0"]


def _session(root: Path, out: str, work: str, **env) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_SESSION_DRY_RUN": "1", "PYTHON": sys.executable, "CNET_DATA_DIR": str(root / "pack"),
           "GPU_SESSION_WORK": str(root / work), "GPU_SESSION_DEADLINE_S": "900", "GPU_SESSION_SEEDS": SEEDS,
           "GPU_SESSION_STATE": str(root / "state"), "GPU_SESSION_SHIPPED": str(root / "shipped"),
           "CNET_THREADS": "1", **env}  # smoke-sized models: one thread each, never waiting on a busy second core
    env.pop("CNET_PRESET", None)
    return subprocess.run(["bash", "scripts/gpu_session.sh", str(root / out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run 1 (stopped after 2 units, the throughput candidates first), accepted; run 2 on a fresh work folder,
    accepted."""
    root = tmp_path_factory.mktemp("session")
    write_fake_cifar(root / "src", n_train=300, n_test=150)
    write_pack(root / "src", root / "pack", quality=90)
    one = _session(root, "out1", "work1", GPU_SESSION_STOP_AFTER="2", GPU_SESSION_THROUGHPUT="1")
    accepted_1 = session_files.accept(root / "out1", root / "shipped", root / "results", root / "state",
                                      models=root / "models") \
        if one.returncode == 0 else None
    two = _session(root, "out2", "work2")
    accepted_2 = session_files.accept(root / "out2", root / "shipped", root / "results", root / "state",
                                      models=root / "models") \
        if two.returncode == 0 else None
    return root, one, two, accepted_1, accepted_2


def _summary(root: Path, out: str) -> dict:
    return json.loads((root / out / "gpu_session.json").read_text())


def test_run_1_stops_after_seed_0_and_brings_back_what_it_finished(runs):
    root, one, _, accepted, _ = runs
    assert one.returncode == 0, one.stdout[-5000:] + one.stderr[-2000:]
    summary = _summary(root, "out1")
    assert summary["preset"] == "smoke" and summary["dry_run"] and summary["recipe"] is None
    assert summary["units"]["trained"] == RUN_1 and summary["units"]["missing_at_start"] == RUN_1 + RUN_2
    assert summary["units"]["missing_at_end"] == RUN_2
    assert "--stop-after-units" in summary["stages"]["controls 0"]["status"]
    files = dict(session_files.check_out_limits(root / "out1"))
    assert set(files) == {"gpu_session.json", "gpu_session.log", "seeds-smoke.json", "shipped-smoke-rk4_refined.tar",
                          "shipped-smoke-euler_fixed.tar", "throughput.json"}
    assert "would pass the limit of 8" in summary["checks"], "the checks' four files would not have come back"
    with tarfile.open(root / "out1" / "shipped-smoke-rk4_refined.tar") as tar:
        names = tar.getnames()
        raw = torch.load(tar.extractfile("smoke-rk4_refined/checkpoint.pt"), map_location="cpu", weights_only=True)
    assert raw["weights"] == "float16" and "optimizer" not in raw["extra"], "the weights alone, as they ship"
    assert any(n.startswith("smoke-rk4_refined/robustness-") for n in names), "the pair's studies ship beside it"
    # accept installed seed 0 (the preset's own recipe) and kept every record in the state folder
    assert accepted["accepted"]["installed"] == ["smoke-rk4_refined", "smoke-euler_fixed", "smoke-rk4_refined/seeds.json"]
    assert accepted["accepted"]["missing"] == RUN_2 and accepted["accepted"]["switched"] is None
    assert sorted(p.name for p in (root / "state").iterdir()) == ["seeds-smoke.json"], "the state folder stays small"


def test_run_2_trains_only_what_run_1_left_and_the_records_join(runs):
    root, _, two, _, accepted = runs
    assert two.returncode == 0, two.stdout[-5000:] + two.stderr[-2000:]
    summary = _summary(root, "out2")
    assert summary["units"]["missing_at_start"] == RUN_2 and summary["units"]["trained"] == RUN_2
    assert summary["units"]["missing_at_end"] == [] and "shipped" not in summary, "seed 0 was not trained again"
    assert accepted["accepted"]["missing"] == []
    seeds = json.loads((root / "shipped" / "smoke-rk4_refined" / SF.SEEDS_FILE).read_text())
    assert [r["seed"] for r in seeds["seeds"]] == [0]
    for rec in seeds["seeds"]:
        assert set(rec["runs"]) == set(rec["sweeps"]) == {"rk4_refined", "euler_fixed", "rk4_fixed", "euler_refined"}
        assert set(rec["adaptive"]) == {"rk4_refined", "euler_fixed"}, "the adaptive-step study of every seed"
        assert set(rec["robustness"]) == {"rk4_refined", "euler_fixed", "euler_fixed on rk4_classic"}
        assert all(r["unit_seconds"] > 0 for r in rec["runs"].values())
    manifests = check_preset_folders(root / "shipped", "smoke", "rerun the dry run")
    assert all(m["weights"] == "float16" and m["data"]["n_test"] == 128 for m in manifests)
    seed0 = next(r for r in seeds["seeds"] if r["seed"] == 0)
    assert {n: seed0["runs"][n]["final_test_acc"] for n in ("rk4_refined", "euler_fixed")} == {
        m["run"]: m["final_test_acc"] for m in manifests}, "seed 0's record describes the models that ship"
    assert seeds["identity"] == summary["identity"]
    over = summary["over_seeds"]
    assert over["seeds"] == [0] and "1 training seed per method" in over["contrast_table"]
    assert over["robustness_words"].startswith("VERDICT")
    # a third command would train nothing: it reads the state folder and the shipped models, and only checks
    args = _namespace(root / "out3", root / "work3", state=root / "state", shipped=root / "shipped", seeds=[0])
    assert gpu_session.know(gpu_session.Session(args)) == []
    kept = sorted(p.name for p in (root / "results").iterdir())
    assert kept == ["gpu_chapters-smoke-check.json", "gpu_session-smoke-1.json", "gpu_session-smoke-2.json",
                    "live_apps-cpu.json"], "dry runs' timings are not measurements: no throughput or pendulum file"


def test_run_2_has_room_and_time_for_every_check(runs):
    root, _, two, _, _ = runs
    assert two.returncode == 0
    summary = _summary(root, "out2")
    assert summary["checks"] == "run"
    assert all(summary["stages"][name]["status"] == "passed" for name in SS_REUSE)
    assert [r["skipped"] for r in summary["graphed_callables"]] == ["torch.cuda.make_graphed_callables needs CUDA"] * 2
    chapters = json.loads((root / "out2" / "chapters.json").read_text())
    assert chapters["toc"] == [nb.stem for nb in toc_notebooks(ROOT)], "the real run executes every chapter of _toc.yml"
    assert {k: v["status"] for k, v in chapters["chapters"].items()} == {"how_to_use": "passed",
                                                                          "manifestation_invariance": "passed"}
    assert "skipped" in summary["cuda_tests_last_line"], "without a GPU the cuda tests are counted as skipped"
    assert set(dict(session_files.check_out_limits(root / "out2"))) == {
        "gpu_session.json", "gpu_session.log", "seeds-smoke.json", "chapters.json", "cuda_tests.txt", "live_apps.json",
        "pendulum_batched.json"}
    pendulum = json.loads((root / "out2" / "pendulum_batched.json").read_text())
    assert pendulum["dry_run"] and pendulum["device"] == "cpu" and pendulum["preset"] == "gpu"
    live = json.loads((root / "out2" / "live_apps.json").read_text())
    assert live["complete"] and live["groups"] == ["image", "solver", "pendulum"]


SS_REUSE = gpu_session.REUSE_PLAN


def test_the_throughput_candidates_are_rehearsed_and_a_dry_run_is_no_measurement(runs):
    root, one, _, _, _ = runs
    assert one.returncode == 0
    record = json.loads((root / "out1" / "throughput.json").read_text())
    assert record["dry_run"] and record["recipe"] == IP.NEXT_GPU_RECIPE and "stopped" not in record
    assert [r["candidate"] for r in record["rows"]] == ["batch", "data", "streams", "compile"]
    assert not [r for r in record["rows"] if "error" in r], record["rows"]
    assert all(r["speedup"] > 0 and r["today_ms"] > 0 for r in record["rows"])
    compiled = next(r for r in record["rows"] if r["candidate"] == "compile")
    assert compiled["first_loss"]["today"] == pytest.approx(compiled["first_loss"]["compiled"], rel=1e-6)
    assert _summary(root, "out1")["stages"]["throughput"]["status"] == "passed"


def _namespace(out, work, **kw):
    base = dict(out=str(out), work=str(work), state=None, shipped=None, dry_run=True, deadline_s=900, seeds=[0, 1, 2],
                train="auto", recipe="auto", no_notebooks=True, stop_after_units=None, throughput=False)
    base.update({k: (str(v) if isinstance(v, Path) else v) for k, v in kw.items()})
    return argparse.Namespace(**base)


def test_the_next_gpu_session_trains_the_next_recipe_and_it_is_the_probes():
    """``--recipe auto``: the gpu preset's next recipe (64-128-256, the probe's: the file it measured names every
    field) is what the next GPU command trains, all 12 units (none of its models ship yet), main runs first."""
    assert SS.target_recipe("gpu") == IP.NEXT_GPU_RECIPE == "64-128-256" != IP.GPU_RECIPE
    probe = json.loads((ROOT / "benchmarks" / "results" / "gpu_recipe-next-h200-real-test.json").read_text())
    with SS.recipe_in_force("gpu", IP.NEXT_GPU_RECIPE):
        runs = IP.image_runs("gpu", controls=True)
        identity = SS.identities("gpu")
        units = SS.plan("gpu", [0, 1, 2])
        assert SS.shipped_records("gpu", identity) == [] and SS.seed0_folders("gpu", identity, SS.SHP.SHIPPED) == {}
    for run, trial in (("rk4_refined", "rk4_refined-64-e40-cutout8"), ("euler_fixed", "euler_fixed-64-e40-cutout8")):
        config = probe["trials"][trial]["config"]
        mine = json.loads(json.dumps(dataclasses.asdict(runs[run])))
        assert {k: mine[k] for k in config} == config, f"{run} is not the probe's {trial}"
    assert runs["rk4_fixed"].final_n_steps() == runs["euler_refined"].final_n_steps() == 4
    assert runs["euler_refined"].refine_at == runs["rk4_refined"].refine_at == (10, 20)
    assert identity != SS.identities("gpu"), "outside the context the preset is the recipe in force"
    assert [u.name for u in units[:2]] == ["rk4_refined seed 0", "euler_fixed seed 0"] and len(units) == 12
    assert [u.main for u in units] == [True] * 6 + [False] * 6
    assert all(gpu_session.ESTIMATE_S[IP.NEXT_GPU_RECIPE][r] > 0 for r in runs)


def test_the_recipe_switch_rewrites_one_line(tmp_path):
    path = tmp_path / "presets.py"
    path.write_text('x = 1\nGPU_RECIPE = "16-32-64"\n"""doc"""\n')
    assert SS.switch_recipe("64-128-256", path) == "16-32-64"
    assert path.read_text() == 'x = 1\nGPU_RECIPE = "64-128-256"\n"""doc"""\n'
    with pytest.raises(ValueError, match="no recipe 'wide'"):
        SS.switch_recipe("wide", path)
    path.write_text('GPU_RECIPE = "a"\nGPU_RECIPE = "b"\n')
    with pytest.raises(ValueError, match="holds 2 lines"):
        SS.switch_recipe("64-128-256", path)
    assert SS.RECIPE_LINE.findall(SS.PRESETS_FILE.read_text()) == [IP.GPU_RECIPE], "the line accept rewrites is there"


def test_records_of_one_seed_join_run_by_run():
    a = {"seed": 1, "runs": {"rk4_refined": {"x": 1}}, "sweeps": {"rk4_refined": []},
         "robustness": {"rk4_refined": []}, "adaptive": {"rk4_refined": {"n": 1}}}
    b = {"seed": 1, "runs": {"euler_fixed": {"x": 2}}, "sweeps": {"euler_fixed": []},
         "robustness": {"euler_fixed": [], "euler_fixed on rk4_classic": []}, "adaptive": {"euler_fixed": {"n": 1}}}
    c = {"seed": 0, "runs": {"rk4_fixed": {}}, "sweeps": {"rk4_fixed": []}, "robustness": None}
    joined = SF.merge_seed_records([a, c, b])
    assert [r["seed"] for r in joined] == [0, 1]
    assert set(joined[1]["robustness"]) == {"rk4_refined", "euler_fixed", "euler_fixed on rk4_classic"}
    records = SS.by_seed(joined)
    assert SS.unit_done(SS.Unit(1, "euler_fixed", True), records) and SS.unit_done(SS.Unit(0, "rk4_fixed", False), records)
    assert not SS.unit_done(SS.Unit(0, "rk4_refined", True), records)
    assert not SS.unit_done(SS.Unit(1, "rk4_refined", True), {1: {**joined[1], "adaptive": {}}})


SMOKE_NEXT = {**{k: IP.IMAGE_PRESETS["smoke"][k] for k in ("runs", "controls")},
              "data": dict(dataset="cifar10", n_train=96, n_test=48),
              "common": {**IP.IMAGE_PRESETS["smoke"]["common"], "channels": (2, 4, 4), "nesterov": True,
                         "label_smoothing": 0.1, "cutout": 4, "lr_schedule": "onecycle", "warmup_epochs": 1}}
"""A next recipe for the smoke preset, smaller still, with the regularisers of the gpu preset's next one: what the
in-process rehearsal trains."""


def test_the_next_recipe_is_trained_across_three_commands_and_accept_switches_the_preset(tmp_path, monkeypatch,
                                                                                          request):
    """The gpu preset's path at smoke size, in process, with two seeds.  Command 1 stops after one run (seed 0's
    rk4_refined: shipped alone, kept in the state folder that the next command carries, no switch).  Command 2
    trains seed 0's euler_fixed, restores rk4_refined from the state folder and ships the pair; accept moves the pair
    out of the carried folder (its list says they are done).  Command 3, carrying no model, trains seed 1's main runs
    only; accept then installs seed 0's pair from where it waited and switches the recipe line."""
    write_fake_cifar(tmp_path / "data", n_train=300, n_test=150, seed=0)
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CNET_THREADS", "1")  # these tiny models: one thread, never waiting on a busy second core
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    monkeypatch.setattr(IP, "GPU_RECIPES", {**IP.GPU_RECIPES, "smoke-now": {k: IP.IMAGE_PRESETS["smoke"][k] for k in
                                                                           ("data", "common", "runs", "controls")},
                                            "smoke-next": SMOKE_NEXT})
    monkeypatch.setattr(SS, "recipes", lambda preset: ("smoke-now", "smoke-next") if preset == "smoke" else (None, None))
    presets = tmp_path / "presets.py"
    presets.write_text('GPU_RECIPE = "smoke-now"\n')
    state, models, shipped, results = (tmp_path / name for name in ("state", "models", "shipped", "results"))
    common = ["--dry-run", "--seeds", "0", "1", "--state", str(state), "--shipped", str(shipped), "--no-notebooks",
              "--stop-after-units"]

    def command(k: int, units: int) -> dict:
        out = tmp_path / f"out{k}"
        assert gpu_session.main(["--out", str(out), "--work", str(tmp_path / f"w{k}"), *common, str(units)]) == 0
        summary = json.loads((out / "gpu_session.json").read_text())
        return summary, session_files.accept(out, shipped, results, state, presets, models)["accepted"]

    one, done = command(1, 1)
    assert one["recipe"] == "smoke-next" and one["units"]["trained"] == ["rk4_refined seed 0"]
    assert "recipe is trained, not yet the preset's" in one["checks"]
    assert sorted(p.name for p in (tmp_path / "out1").iterdir()) == [
        "gpu_session.json", "seeds-smoke.json", "shipped-smoke-rk4_refined.tar"]
    assert done["switched"] is None and done["installed"] == [] and not shipped.exists()
    assert done["kept_in_state"] == ["seed0.json", "seeds-smoke.json", "smoke-rk4_refined"], "it travels to its partner"

    two, done = command(2, 1)
    assert two["units"]["trained"] == ["euler_fixed seed 0"]
    assert set(two["shipped"]) == {"rk4_refined", "euler_fixed"}, "rk4_refined, restored, now ships the pair's studies"
    assert done["switched"] is None and done["kept_in_state"] == ["seed0.json", "seeds-smoke.json"]
    assert done["waiting_in_models"] == ["smoke-euler_fixed", "smoke-rk4_refined"], "waiting, not carried"
    assert json.loads((state / SS.HELD).read_text())["rk4_refined"]["shipped_with_its_partner"]
    assert SS.pair_shipped(SS.seed0_folders("smoke", two["identity"], models))

    three, done = command(3, 2)
    assert three["units"]["seed0_held_by_accept"] == ["euler_fixed", "rk4_refined"] and not three["units"]["seed0_folders"]
    assert three["units"]["trained"] == ["rk4_refined seed 1", "euler_fixed seed 1"], "seed 0 was not trained again"
    assert done["switched"] == "smoke-now -> smoke-next"
    assert presets.read_text() == 'GPU_RECIPE = "smoke-next"\n'
    assert done["installed"] == ["smoke-rk4_refined", "smoke-euler_fixed", "smoke-rk4_refined/seeds.json"]
    assert done["kept_in_state"] == ["seeds-smoke.json"] and done["waiting_in_models"] == []
    assert done["missing"] == ["rk4_fixed seed 0", "euler_refined seed 0", "rk4_fixed seed 1", "euler_refined seed 1"]
    folders = SS.seed0_folders("smoke", three["identity"], shipped)
    manifest = json.loads((folders["rk4_refined"] / "manifest.json").read_text())
    assert manifest["weights"] == "float16" and "smoke-next" in manifest["command"]
    seeds = json.loads((folders["rk4_refined"] / SF.SEEDS_FILE).read_text())
    assert [r["seed"] for r in seeds["seeds"]] == [0, 1] and all(set(r["adaptive"]) == {"rk4_refined", "euler_fixed"}
                                                                   for r in seeds["seeds"])
    assert sorted(p.name for p in results.iterdir()) == [f"gpu_session-smoke-smoke-next-{k}.json" for k in (1, 2, 3)]


def test_accept_refuses_a_session_of_another_recipe(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "gpu_session.json").write_text(json.dumps({
        "preset": "smoke", "recipe": None, "identity": {"rk4_refined": "0123456789"}, "units": {
            "seeds": [0], "trained": ["rk4_refined seed 0"]}}))
    with pytest.raises(ValueError, match="trained other runs than this checkout's smoke recipe"):
        session_files.accept(files, tmp_path / "shipped", tmp_path / "results", tmp_path / "state",
                             models=tmp_path / "models")
    assert not (tmp_path / "shipped").exists()


TRAINING_IMPORTS = ("gpu_session", "session_files", "session_state", "cnet_lib.images", "cnet_lib.images.runs.run_store",
                    "cnet_lib.images.runs.run_loading", "cnet_lib.images.runs.shipped", "cnet_lib.images.runs.shipping_copy",
                    "cnet_lib.images.studies.shipping", "cnet_lib.images.studies.adaptive_cached",
                    "cnet_lib.images.studies.robustness_cached", "cnet_lib.images.studies.sweep_cached",
                    "cnet_lib.report", "cnet_lib.runtime.settings", "cnet_lib.runtime.device")
"""Every module a training command imports (``scripts/gpu_session.py``'s training path, lazily imported ones too)."""


def test_a_training_command_needs_no_notebook_stack():
    """A GPU machine's image has no plotly or Jupyter: a training command must not import them, so that it runs
    without the 26 MiB of carried wheels (the checkout, the data pack and gpu_state/ must fit the 64 MiB that
    travel).  The imports of the training path run with those packages made unimportable."""
    code = ("import sys\n"
            "BLOCKED = ('plotly', 'ipywidgets', 'nbformat', 'nbclient', 'ipykernel', 'IPython', 'jupyter_client')\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in BLOCKED:\n"
            "            raise ImportError('the notebook stack: ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            f"sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'scripts')!r}]\n"
            "import importlib\n"
            f"for name in {TRAINING_IMPORTS!r}:\n"
            "    importlib.import_module(name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


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
    s = gpu_session.Session(_namespace(tmp_path / "out", tmp_path / "work", seeds=[0], deadline_s=60))
    done = {"preset": "gpu", "status": "passed", "seconds": 12.5, "text_tail": ""}
    running = {"preset": "gpu", "status": "running", "seconds": 0.0, "started_unix": time.time() - 30}
    (s.work / "chapters-images.json").write_text(json.dumps({"chapters": {"continuousnet": done, "robustness": running},
                                                             "toc": ["continuousnet", "robustness"]}))
    gpu_session.merge_chapters(s)
    chapters = json.loads((s.out / "chapters.json").read_text())["chapters"]
    assert chapters["continuousnet"]["status"] == "passed"
    assert chapters["robustness"]["status"].startswith("stopped at the deadline after 3") and chapters["robustness"]["seconds"] >= 30


# the H100 session of 2026-11-27 wrote "cuda:0"; the ids keep the word "cuda" out of the test's keywords (conftest.py
# would skip it on a machine without a GPU, which it does not need)
@pytest.mark.parametrize("device", ["cuda", "cuda:0"], ids=["plain", "indexed"])
def test_a_check_session_is_taken_in_without_touching_the_shipped_models(tmp_path, device):
    files = tmp_path / "files"
    files.mkdir()
    (files / "gpu_session.json").write_text(json.dumps({"preset": "gpu", "reused": "nothing to train",
                                                        "units": {"trained": []}}))
    (files / "chapters.json").write_text(json.dumps({"chapters": {}, "toc": []}))
    (files / "live_apps.json").write_text(json.dumps({"device": device, "groups": ["image"], "complete": False}))
    (files / "pendulum_batched.json").write_text(json.dumps({"device": device, "preset": "gpu", "dry_run": False}))
    (files / "throughput.json").write_text(json.dumps({"dry_run": False, "machine": {"cuda": "NVIDIA H200"}}))
    session_files.accept(files, tmp_path / "shipped", tmp_path / "results", tmp_path / "state",
                         models=tmp_path / "models")
    assert not (tmp_path / "shipped").exists() and not (tmp_path / "state").exists()
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "gpu_chapters-gpu-check.json", "gpu_session-gpu-check.json", "gpu_throughput-nvidia-h200.json",
        "live_apps-cuda.json", "pendulum_batched-gpu-cuda.json"]


def test_carry_says_what_travels_and_whether_it_fits(tmp_path):
    """``session_files.py carry``: the working tree as git lists it, the data pack and the state folder (and the
    checks' wheels when asked), in MiB, against the 64 MiB the device tool takes."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "big.bin").write_bytes(b"x" * 2**20)
    (tmp_path / ".gitignore").write_text("shared_pack/\ngpu_state/\n.whl/\n")
    for name, mib in (("shared_pack", 40), ("gpu_state", 30), (".whl", 1)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_bytes(b"y" * (mib * 2**20))
    report = session_files.carry(tmp_path)
    assert report["carry"] == ["shared_pack", "gpu_state"] and report["MiB"]["working tree"] == pytest.approx(1, abs=0.01)
    assert report["total_MiB"] == pytest.approx(71, abs=0.01) and not report["fits"], "over 64 MiB: the call is refused"
    (tmp_path / "gpu_state" / "f").write_bytes(b"y" * 2**20)
    report = session_files.carry(tmp_path, wheels=True)
    assert report["carry"] == ["shared_pack", "gpu_state", ".whl"] and report["fits"] and report["total_MiB"] < 44


def test_the_limits_are_checked():
    with pytest.raises(ValueError, match="at most 8 come back"):
        session_files.check_out_limits(ROOT / "cnet_lib" / "images")
