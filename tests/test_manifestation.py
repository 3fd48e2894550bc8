"""The manifestation study (cnet_lib/studies/manifestation): the sweep of one model over many graphs and ``cnet
sweep``, the cached sweeps of the trained runs, the graph rule, the verdict of one pair, the contrast over training
seeds, integrator x refinement, their tables, sentences, figures and live app, and the numbers the chapter's prose
quotes (glued: the prose states no number of its own, and its words follow the numbers).  Tiny models on fake CIFAR
and synthetic sweeps whose outcome is known in advance: seconds."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from scipy import stats
from text_tables import row_of

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.images.runs.image_presets import CONTROLS, IMAGE_PRESETS, image_runs
from cnet_lib.images.training.evaluation import manifestation_sweep
from cnet_lib.images.training.train_config import TrainConfig
from cnet_lib.images.training.train_loop import train
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.core.models import ContinuousNet
from cnet_lib.images.runs import run_store as RS
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as MS
from cnet_lib.cli import sweep as sweep_cli
from cnet_lib.studies import manifestation as M
from cnet_lib import book

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
GRID = dict(schemes=("euler", "rk4_classic"), n_steps=(1, 2), compress=(1,), compress_schemes=("rk4_classic",))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=64, n_test=40, seed=1)
    return root, load_dataset("cifar10", root)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Both smoke runs, trained once into a module-wide runs root, and their sweeps."""
    data_dir = tmp_path_factory.mktemp("study-data")
    write_fake_cifar(data_dir, n_train=100, n_test=40, seed=0)
    root = tmp_path_factory.mktemp("runs")
    runs = RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), verbose=False, **TINY)
    return runs, M.run(runs, GRID, verbose=False)


# ----------------------------------------------------------------------------- the sweep of one model, and cnet sweep
def _model(skip_init):
    torch.manual_seed(0)
    return ContinuousNet((4, 8, 8), n_basis=4, scheme="rk4_classic", skip_init=skip_init).eval()


def test_sweep_rows(data):
    _, d = data
    model = _model(skip_init=False)
    before = {k: v.clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}
    rows = manifestation_sweep(model, d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "rk4_classic"),
                                 n_steps=(1, 2, 4), compress=(1, 2), compress_schemes=("rk4_38", "euler"),
                                 batch_size=16, progress=False)
    kinds = [r["kind"] for r in rows]
    # 1 trained + 2 schemes x 3 N_t + 2 schemes x 2 compressions + identity
    assert kinds == ["trained"] + ["manifestation"] * 6 + ["compressed"] * 4 + ["identity"]
    assert [(r["scheme"], r["n_steps"]) for r in rows[1:7]] == [(s, n) for s in ("euler", "rk4_classic") for n in (1, 2, 4)]
    assert [r.get("is_trained") for r in rows[1:7]] == [False] * 5 + [True]
    assert rows[6]["accuracy"] == rows[0]["accuracy"]
    assert [(r["scheme"], r["n_basis"], r["n_steps"]) for r in rows[7:11]] == [
        ("rk4_38", 1, 1), ("rk4_38", 2, 2), ("euler", 1, 1), ("euler", 2, 2)]
    full = rows[0]["n_parameters"]
    ident = rows[-1]
    assert rows[7]["n_parameters"] < rows[8]["n_parameters"] < full
    assert ident["n_parameters"] < rows[7]["n_parameters"] and ident["units"] == 0 and ident["scheme"] is None
    assert [r["units"] for r in rows[1:4]] == [3, 6, 12] and rows[0]["units"] == 4 * 4 * 3
    assert all(0 <= r["accuracy"] <= 1 and r["seconds"] > 0 for r in rows)
    # M = 4 and 8 are not compressions of an M = 4 model: refused, not dropped (issue 18)
    with pytest.raises(ValueError, match="compress holds M = 4, 8, but the model has M = 4"):
        manifestation_sweep(model, d.test_x, d.test_y, d.mean, d.std, compress=(1, 4, 8), progress=False)
    # the model is left as it was
    assert model.manifestation == [("rk4_classic", 4)] * 3
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items() if torch.is_tensor(v))


def test_skip_init_model_is_the_identity_everywhere(data):
    # s(t) = 0 at initialisation: every manifestation and compression computes the same function
    _, d = data
    rows = manifestation_sweep(_model(skip_init=True), d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "rk4_38"),
                                 n_steps=(1, 3), compress=(2,), batch_size=40, progress=False)
    assert len({r["accuracy"] for r in rows}) == 1


def test_table_and_figure(data):
    _, d = data
    rows = manifestation_sweep(_model(skip_init=False), d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "midpoint"),
                                 n_steps=(1, 2), compress=(2,), progress=False)
    table = M.sweep_table(rows)
    assert "identity" in table and "manifestation" in table and table.count("\n") >= len(rows)
    fig = M.fig_accuracy_vs_nt({"model": rows})
    names = [t.name for t in fig.data]
    assert names[:2] == ["euler", "midpoint"] and any("trained" in n for n in names) and any("compressed" in n for n in names)
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].line.dash == "dash"


def test_sweep_checkpoint_and_command_line(data, tmp_path):
    root, _ = data
    cfg = TrainConfig(dataset="cifar10", data_dir=str(root), channels=(4, 8, 8), batch_size=32, lr=0.05,
                        lr_schedule="constant", scheme="rk4_classic", n_basis=1, refine_at=(1,), epochs=2,
                        device="cpu", progress=False, out_dir=str(tmp_path / "run"))
    res = train(cfg)
    out = tmp_path / "sweep.json"
    html = tmp_path / "sweep.html"
    argv = [str(tmp_path / "run" / "checkpoint.pt"), "--schemes", "euler", "rk4_38", "--n-steps", "1", "2",
            "--compress", "1", "--out", str(out), "--html", str(html), "--quiet", "--device", "cpu"]
    assert sweep_cli.main(argv) == 0
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert payload["n_test"] == 40 and payload["environment"]["device"] == "cpu" and payload["epochs_trained"] == 2
    assert [r["kind"] for r in rows].count("manifestation") == 4 and rows[-1]["kind"] == "identity"
    assert rows[0]["accuracy"] == pytest.approx(res.history[-1]["test_acc"])  # same model, same test images
    assert "<html>" in html.read_text()
    assert sweep_cli.main([str(tmp_path / "nothing.pt"), "--quiet"]) == 1


# ----------------------------------------------------------------------------- the sweeps of the trained runs, cached
def test_sweep_is_cached_beside_the_checkpoint(study, monkeypatch):
    runs, sweeps = study
    for name, rows in sweeps.items():
        kinds = [r["kind"] for r in rows]
        assert kinds.count("trained") == 1 and kinds.count("identity") == 1 and "compressed" in kinds
        assert len([k for k in kinds if k == "manifestation"]) == 4
        trained = next(r for r in rows if r["kind"] == "trained")
        assert trained["accuracy"] == pytest.approx(runs[name].final_accuracy)
        files = list(runs[name].out_dir.glob("sweep-*.json"))
        assert len(files) == 1 and json.loads(files[0].read_text())["rows"] == rows

    def no_sweep(*a, **k):
        raise AssertionError("run recomputed a cached sweep")

    monkeypatch.setattr(MS, "manifestation_sweep", no_sweep)
    assert M.run(runs, GRID, verbose=False) == sweeps
    with pytest.raises(AssertionError):  # another grid is another cache entry
        M.run(runs, {**GRID, "n_steps": (1,)}, verbose=False)


# ----------------------------------------------------------------------------- the graph rule
def _graph(scheme, n_steps, n_basis=4, **extra):
    return {"kind": "manifestation", "scheme": scheme, "n_steps": n_steps, "n_basis": n_basis, "accuracy": 0.5, **extra}


EULER = {"kind": "trained", "scheme": "euler", "n_steps": 4, "n_basis": 4, "accuracy": 0.8}
RK4 = {"kind": "trained", "scheme": "rk4_classic", "n_steps": 4, "n_basis": 4, "accuracy": 0.8}


@pytest.mark.parametrize("trained, scheme, n_steps, kind", [
    (EULER, "euler", 8, "valid"),  # the Euler model on a finer Euler grid: more accurate
    (EULER, "euler", 2, "coarser"),
    (EULER, "midpoint", 4, "valid"),
    (EULER, "rk4_38", 16, "valid"),
    (EULER, "rk4_classic", 6, "straddles"),  # 6 steps on 4 pieces: a step holds the jump at 1/4
    (EULER, "euler", 6, "straddles"),
    (EULER, "rk4_classic", 3, "coarser"),  # coarser first: it is no finer whatever its alignment
    (RK4, "midpoint", 8, "lower order"),
    (RK4, "euler", 16, "lower order"),
    (RK4, "rk4_38", 4, "valid"),  # the other fourth-order scheme on the trained steps
    (RK4, "rk4_classic", 12, "valid"),
    (RK4, "rk4_38", 6, "straddles"),
])
def test_each_graph_is_judged_by_the_three_conditions(trained, scheme, n_steps, kind):
    assert M.graph_kind(_graph(scheme, n_steps), trained) == kind


def test_per_block_steps_and_pieces_and_other_bases():
    trained = {**RK4, "n_steps": [2, 4, 4], "n_basis": [2, 4, 4]}
    assert M.graph_kind(_graph("rk4_classic", 4, [2, 4, 4]), trained) == "valid"
    assert M.graph_kind(_graph("rk4_classic", 6, [2, 4, 4]), trained) == "straddles", "6 aligns with 2 pieces, not 4"
    assert M.graph_kind(_graph("rk4_classic", [2, 4, 3], [2, 4, 4]), trained) == "coarser"
    hats = {**RK4, "n_steps": 2, "n_basis": 3}  # knots at 0, 1/2, 1
    assert M.graph_kind(_graph("rk4_38", 4, 3), hats, "piecewise_linear") == "valid"
    assert M.graph_kind(_graph("rk4_38", 3, 3), hats, "piecewise_linear") == "straddles"
    assert M.graph_kind(_graph("rk4_38", 3, 3), hats, "legendre") == "valid", "a smooth θ has no jumps to straddle"


def test_the_trained_graph_and_bad_rows():
    assert M.graph_kind(_graph("euler", 4, is_trained=True), EULER) == "trained"
    with pytest.raises(ValueError, match="only manifestation rows"):
        M.graph_kind({"kind": "identity"}, EULER)
    with pytest.raises(ValueError, match="unknown graph kind"):
        M.graphs_of_kind([EULER], "finer")
    with pytest.raises(ValueError, match="exactly one row of kind 'trained'"):
        M.trained_row([_graph("euler", 4)])
    rows = [EULER, _graph("euler", 8), _graph("rk4_classic", 6), _graph("euler", 2)]
    assert [r["n_steps"] for r in M.graphs_of_kind(rows, "valid")] == [8]
    assert set(M.GRAPH_KINDS) == {"trained", "valid", "straddles", "coarser", "lower order"}


# ----------------------------------------------------------------------------- the verdict of one pair
def _rows(trained, identity, off, scheme="euler", nt=8):
    """One model's sweep, trained at N_t = M = ``nt`` (piecewise-constant θ)."""
    rows = [{"kind": "trained", "scheme": scheme, "n_steps": nt, "n_basis": nt, "accuracy": trained}]
    for (s, n), a in off.items():
        rows.append({"kind": "manifestation", "scheme": s, "n_steps": n, "n_basis": nt, "accuracy": a,
                     "is_trained": (s, n) == (scheme, nt)})
    rows.append({"kind": "identity", "scheme": None, "n_steps": 0, "accuracy": identity})
    return rows


def test_verdict_sees_the_paper_contrast():
    # the CPU-scale numbers (Euler 82.0 / 63.0 / 53.8, RK4 77.5 / 77.0-77.6, identity 14.3 / 18.3)
    euler = _rows(0.820, 0.143, {("euler", 4): 0.426, ("midpoint", 8): 0.630, ("rk4_classic", 8): 0.538,
                                 ("rk4_classic", 16): 0.55, ("rk4_classic", 12): 0.30})
    rk4 = _rows(0.775, 0.183, {("rk4_classic", 2): 0.774, ("rk4_classic", 16): 0.770, ("midpoint", 8): 0.777,
                               ("euler", 8): 0.60}, scheme="rk4_38")
    v = M.judge({"euler_fixed": euler, "rk4_refined": rk4})
    assert v.blocks_matter and v.contrast
    assert v.gaps["euler_fixed"] == pytest.approx(67.7) and v.drops["euler_fixed"] == pytest.approx(28.2)
    assert v.drops["rk4_refined"] == pytest.approx(0.5), "lower orders and N_t below the trained one are not counted"
    # issue 40: 12 steps on 8 pieces cross θ's jumps: shown apart, never judged
    assert v.straddle_drops["euler_fixed"] == pytest.approx(52.0) and v.drops["euler_fixed"] < 52.0
    text = str(M.word_verdict(v, n_test=2000))
    assert "contrast appears" in text and "28.2" in text and "67.7" in text and "2,000 held-out images" in text
    assert "steps cross θ's jumps" in text and "52.0 points" in text


def test_verdict_refuses_to_claim_invariance_of_blocks_that_do_nothing():
    flat = _rows(0.456, 0.450, {("euler", 1): 0.456, ("rk4_classic", 8): 0.456})
    v = M.judge({"euler_fixed": flat, "rk4_refined": flat})
    assert not v.blocks_matter and not v.contrast
    text = M.word_verdict(v)
    assert "do not matter" in text and "cannot show manifestation invariance" in text


def test_verdict_says_when_the_contrast_is_missing():
    euler = _rows(0.80, 0.20, {("midpoint", 8): 0.79, ("rk4_classic", 8): 0.795})
    rk4 = _rows(0.78, 0.20, {("midpoint", 8): 0.60, ("rk4_38", 8): 0.70, ("rk4_classic", 16): 0.78},
                scheme="rk4_classic")  # midpoint is of lower order than RK4: its 18 points are not judged
    v = M.judge({"euler_fixed": euler, "rk4_refined": rk4})
    assert v.blocks_matter and not v.contrast
    text = str(M.word_verdict(v))
    assert "does not appear" in text and "loses only 1.0 points" in text and "RK4-trained model loses 8.0" in text
    with pytest.raises(ValueError):
        M.judge({"euler_fixed": euler})


def test_verdict_on_a_real_sweep(study):
    _, sweeps = study
    v = M.judge(sweeps)
    words = M.word_verdict(v, n_test=32, preset="smoke")
    assert isinstance(v.blocks_matter, bool) and "VERDICT" in words.splitlines()[-1] and "(preset smoke)" in words
    assert words.html.count("<p") == len(words.splitlines()), "one paragraph per sentence"


def test_table1_and_text(study):
    _, sweeps = study
    rows = M.table1_rows(sweeps)
    assert {r["kind"] for r in rows} == {"trained", "manifestation", "compressed", "identity"}
    assert all(r["speedup"] > 0 for r in rows)
    assert all(r["delta_points"] == 0 for r in rows if r["kind"] == "trained")
    text = M.table1_table(rows)
    assert "blocks removed" in text and "θ compressed" in text and "speed-up" in text


def sweep(trained, identity, scheme="euler", nt=2):
    return [{"kind": "trained", "scheme": scheme, "n_steps": nt, "n_basis": nt, "units": 3 * nt, "n_parameters": 10,
             "accuracy": trained, "ms_per_image": 0.5, "seconds": 1.0},
            {"kind": "manifestation", "scheme": scheme, "n_steps": nt, "n_basis": nt, "units": 3 * nt, "n_parameters": 10,
             "accuracy": trained, "ms_per_image": 0.5, "seconds": 1.0, "is_trained": True},
            {"kind": "identity", "scheme": None, "n_steps": 0, "n_basis": 0, "units": 0, "n_parameters": 4,
             "accuracy": identity, "ms_per_image": 0.1, "seconds": 0.2}]


def test_format_sweep_summary_and_sweeps():
    sweeps = {"rk4_refined": sweep(0.77777, 0.18311, "rk4_classic", 4), "euler_fixed": sweep(0.8, 0.14, "euler", 8)}
    grid = {"schemes": ("euler", "rk4_classic"), "n_steps": (1, 2), "compress": (1,)}
    text = M.summary_table(sweeps, grid, n_test=2000)
    assert text.splitlines()[0] == "grid: schemes ['euler', 'rk4_classic'], N_t [1, 2], compressed M [1]; 2,000 held-out images"
    assert row_of(text, "RK4-trained (refined)")[1:] == ["rk4_classic, N_t = 4", "0.7778", "0.1831"]
    assert row_of(text, "Euler-trained (fixed depth)")[1:] == ["euler, N_t = 8", "0.8000", "0.1400"]
    assert not M.summary_table(sweeps).startswith("grid"), "grid and n_test are optional"
    both = M.sweeps_table(sweeps)
    first, second = both.split("\n\n")
    assert first.splitlines()[0] == "RK4-trained (refined)" and second.splitlines()[0] == "Euler-trained (fixed depth)"
    # the graph and its accuracy first (issue 53: what a phone shows without a swipe)
    assert row_of(first, "identity") == ["identity", "-", "0", "0.1831", "0", "0", "4", "0.100"]
    assert row_of(second, "manifestation *")[3] == "0.8000"


# ----------------------------------------------------------------------------- figures and the live app
def test_the_sweep_figures(study):
    runs, sweeps = study
    fig = M.fig_accuracy_vs_nt(sweeps)
    names = [t.name for t in fig.data]
    assert names.count("euler") == 2 and names.count("rk4_classic") == 2 and names.count("trained graph") == 2
    assert sum(s.line.dash == "dash" for s in fig.layout.shapes) == 2, "one identity line per model"

    fig = M.fig_sweep_explorer(sweeps)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["scheme: euler", "scheme: rk4_classic"]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["1", "2"]


def test_live_app_evaluates_the_model(study):
    import plotly.graph_objects as go

    runs, sweeps = study
    app = M.live_app(runs, M.fig_sweep_explorer(sweeps), n_images=16, n_show=4)
    assert set(app.controls) == {"model", "scheme", "n_steps", "compress"}
    assert isinstance(app.static_fig, go.Figure)


# ----------------------------------------------------------------------------- over training seeds
def _seed_sweep(trained: float, identity: float, off: dict, n_steps: int = 4, scheme: str = "rk4_classic") -> list[dict]:
    """One model's sweep: trained at N_t = M = ``n_steps`` (piecewise-constant θ), ``off`` its other graphs."""
    rows = [{"kind": "trained", "scheme": scheme, "n_steps": n_steps, "n_basis": n_steps, "accuracy": trained},
            {"kind": "identity", "accuracy": identity}]
    rows += [{"kind": "manifestation", "scheme": s, "n_steps": n, "n_basis": n_steps, "accuracy": a,
              "is_trained": (s, n) == (scheme, n_steps)} for (s, n), a in off.items()]
    return rows


SEED_GRID = [("euler", 4), ("midpoint", 2), ("midpoint", 4), ("rk4_classic", 3), ("rk4_classic", 4), ("rk4_classic", 6),
        ("rk4_classic", 8)]


def _pair(euler_loss: float, rk4_loss: float, identity: float = 0.30, cross: float = 0.0) -> dict:
    """Both models of one seed: each loses ``*_loss`` on every graph but its own, and ``cross`` more on the graph
    whose steps cross θ's jumps (rk4_classic at N_t = 6, with M = 4)."""
    def acc(top, loss, k, own):
        return top if k == own else top - loss - (cross if k == ("rk4_classic", 6) else 0.0)

    euler = {k: acc(0.70, euler_loss, k, ("euler", 4)) for k in SEED_GRID}
    rk4 = {k: acc(0.72, rk4_loss, k, ("rk4_classic", 4)) for k in SEED_GRID}
    return {"euler_fixed": _seed_sweep(0.70, identity, euler, scheme="euler"), "rk4_refined": _seed_sweep(0.72, identity, rk4)}


def test_the_contrast_over_three_seeds_holds_and_says_how_many_seeds():
    seeds = {0: _pair(0.08, 0.005), 1: _pair(0.10, 0.010), 2: _pair(0.09, 0.000)}
    c = M.over_seeds(seeds)
    assert c.seeds == [0, 1, 2] and c.outcome == "contrast" and c.blocks_matter
    assert c.drops["euler_fixed"] == pytest.approx([8.0, 10.0, 9.0])
    expected = stats.ttest_ind([8.0, 10.0, 9.0], [0.5, 1.0, 0.0], equal_var=False)
    assert c.methods["p"] == pytest.approx(expected.pvalue) and c.methods["diff"] == pytest.approx(8.5)
    table = str(M.contrast_table(c))
    assert "3 training seeds per method (seeds 0, 1, 2)" in table
    # issue 40: only graphs that are valid for a model or cross θ's jumps are listed; coarser ones are not
    assert "rk4_classic, N_t = 8" in table and "midpoint, N_t = 4" in table and "rk4_classic, N_t = 6" in table
    assert "midpoint, N_t = 2" not in table and "rk4_classic, N_t = 3" not in table, "fewer steps than trained"
    assert "euler, N_t = 4" not in table, "the Euler model's own graph, of lower order for the RK4 model"
    assert "blocks removed" in table and "61.0 [60.0, 62.0]" in table  # Euler-trained off its graph: 70 - (8, 10, 9)
    assert "worst loss, valid graphs" in table and "worst loss, steps across θ's jumps" in table
    assert "71.5 [71.0, 72.0] °" in table, "midpoint is of lower order than the RK4 model's scheme: marked, not judged"
    words = M.word_contrast(c).splitlines()
    assert words[-1].startswith("VERDICT (training methods, 3 seeds per method, valid graphs only): the paper's "
                                "contrast holds")


def test_graphs_that_cross_the_jumps_of_theta_never_enter_the_verdict():
    """Issue 40: a large loss on steps that straddle θ's jumps (N_t = 6 with M = 4) is shown on its own row and
    changes neither the drops nor the outcome; the same loss on a valid graph would."""
    calm = {k: _pair(0.015, 0.005) for k in range(3)}
    crossing = {k: _pair(0.015, 0.005, cross=0.15) for k in range(3)}
    a, b = M.over_seeds(calm), M.over_seeds(crossing)
    assert a.drops == b.drops and a.outcome == b.outcome == "no contrast"
    assert b.straddle_drops["euler_fixed"] == pytest.approx([16.5] * 3)
    assert b.straddle_drops["rk4_refined"] == pytest.approx([15.5] * 3)
    rows = {r["graph"]: r for r in b.rows}
    assert rows["rk4_classic, N_t = 6"]["kinds"] == {"euler_fixed": "straddles", "rk4_refined": "straddles"}
    assert rows["rk4_classic, N_t = 8"]["kinds"] == {"euler_fixed": "valid", "rk4_refined": "valid"}
    assert rows["midpoint, N_t = 4"]["kinds"] == {"euler_fixed": "valid", "rk4_refined": "lower order"}
    assert "On graphs whose steps cross θ's jumps, never judged" in str(M.word_contrast(b))


def test_overlapping_seeds_show_no_contrast_and_one_seed_makes_no_claim():
    c = M.over_seeds({0: _pair(0.08, 0.01), 1: _pair(0.00, 0.03), 2: _pair(0.02, 0.0)})
    assert c.outcome == "no contrast" and c.methods["ci95"][0] <= 0
    one = M.over_seeds({0: _pair(0.08, 0.0)})
    assert one.outcome == "one seed" and one.methods is None
    assert "1 training seed per method (seed 0)" in str(M.contrast_table(one))
    assert "no claim about the training methods" in M.word_contrast(one).splitlines()[-1]
    weak = M.over_seeds({0: _pair(0.08, 0.0), 1: _pair(0.08, 0.0, identity=0.65)})
    assert weak.outcome == "blocks do not matter" and not weak.blocks_matter
    # issue 51: the opposite of the contrast (the RK4-trained models lose more, the interval below 0) is said so
    opposite = M.over_seeds({0: _pair(0.0, 0.05), 1: _pair(0.01, 0.06), 2: _pair(0.0, 0.055)})
    assert opposite.outcome == "contradicted" and opposite.methods["ci95"][1] < 0
    assert "the opposite of the paper's contrast" in M.word_contrast(opposite).splitlines()[-1]


# ----------------------------------------------------------------------------- integrator x refinement
@pytest.mark.parametrize("preset", list(IMAGE_PRESETS))
def test_every_preset_has_a_balanced_two_by_two(preset):
    runs = image_runs(preset, controls=True)
    assert set(CONTROLS) <= set(runs) and set(CONTROLS).isdisjoint(image_runs(preset)), "controls only when asked"
    assert set(M.CELLS.values()) <= set(runs)
    cells = {run: runs[run] for run in M.CELLS.values()}
    # the same data, recipe and widths everywhere; the same final M and N_t; the refined cells on the same schedule
    same = {"dataset", "n_train", "n_test", "channels", "batch_size", "lr", "lr_schedule", "lr_milestones", "epochs",
            "weight_decay", "momentum", "basis", "epsilon", "seed"}
    for field in same:
        assert len({repr(getattr(c, field)) for c in cells.values()}) == 1, field
    assert len({c.final_n_steps() for c in cells.values()}) == 1
    assert cells["euler_refined"].refine_at == cells["rk4_refined"].refine_at and cells["rk4_refined"].refine_at
    assert cells["rk4_fixed"].refine_at == cells["euler_fixed"].refine_at == ()
    for (scheme, _), run in M.CELLS.items():
        assert cells[run].scheme == scheme


def _cell_sweep(own: float, valid_loss: float, scheme: str, identity: float = 0.2) -> list:
    """A model trained at N_t = M = 4 that loses ``valid_loss`` on rk4_38 at N_t = 8 (a valid graph for both
    integrators) and 0.3 more across θ's jumps (rk4_classic at N_t = 6)."""
    return [{"kind": "trained", "scheme": scheme, "n_steps": 4, "n_basis": 4, "accuracy": own},
            {"kind": "manifestation", "scheme": "rk4_38", "n_steps": 8, "n_basis": 4, "accuracy": own - valid_loss},
            {"kind": "manifestation", "scheme": "rk4_classic", "n_steps": 6, "n_basis": 4,
             "accuracy": own - valid_loss - 0.3},
            {"kind": "identity", "accuracy": identity}]


def _seed(loss: dict) -> dict:
    return {run: _cell_sweep(0.8, loss[run], "euler" if run.startswith("euler") else "rk4_classic") for run in loss}


def test_the_effects_add_up_to_the_main_contrast():
    # integrator effect 0.05 everywhere, refinement effect 0.02 for Euler and 0.00 for RK4
    loss = {"rk4_refined": 0.00, "rk4_fixed": 0.00, "euler_refined": 0.05, "euler_fixed": 0.07}
    fx = M.factorial_over_seeds({0: _seed(loss)}, preset="cpu")
    assert fx.complete and fx.seeds == [0]
    e = {k: v["values"][0] for k, v in fx.effects.items()}
    assert e["integrator, refined"] == pytest.approx(5.0) and e["integrator, fixed depth"] == pytest.approx(7.0)
    assert e["refinement, Euler"] == pytest.approx(2.0) and e["refinement, RK4"] == pytest.approx(0.0)
    assert e["main runs' contrast"] == pytest.approx(e["integrator, refined"] + e["refinement, Euler"])
    assert fx.cells["euler_fixed"]["straddles"] == pytest.approx([37.0])
    words = str(M.word_factorial(fx))
    assert "the integrator carries more of the contrast" in words and "exploratory" in words
    assert all(v["test"] is None for v in fx.effects.values()), "no test with one seed per cell"
    table = str(M.factorial_table(fx))
    assert "1 training seed per cell (seed 0)" in table and "Euler" in table and "fixed depth" in table


def test_refinement_can_carry_it_and_seeds_give_intervals():
    seeds = {s: _seed({"rk4_refined": 0.002 * s, "rk4_fixed": 0.06 + d, "euler_refined": 0.01 + 0.003 * s,
                       "euler_fixed": 0.07 + d})
             for s, d in enumerate((0.0, 0.01, -0.01))}
    fx = M.factorial_over_seeds(seeds, preset="cpu")
    assert fx.seeds == [0, 1, 2] and fx.effects["refinement, RK4"]["test"]["ci95"][0] > 0
    words = str(M.word_factorial(fx))
    assert "refinement carries more of the contrast" in words and "95% interval" in words
    tests = {name: e["test"] for name, e in fx.effects.items() if name != "main runs' contrast"}
    assert all(t["p_holm"] >= t["p"] for t in tests.values()) and "p_holm" not in fx.effects["main runs' contrast"]["test"]
    held = [name for name, t in tests.items() if t["p_holm"] < 0.05]
    assert held and f"at the 5% level: {'; '.join(held)}." in words


def test_holm_over_the_four_effects_with_two_seeds_per_cell():
    """Two seeds per cell: one effect's interval excludes zero (p 0.037, the cpu preset's case), corrected over the
    four effects it does not hold, and the words say both."""
    seeds = {0: _seed({"rk4_refined": 0.0, "rk4_fixed": 0.0005, "euler_refined": 0.023, "euler_fixed": 0.068}),
             1: _seed({"rk4_refined": 0.0245, "rk4_fixed": 0.010, "euler_refined": 0.027, "euler_fixed": 0.053})}
    fx = M.factorial_over_seeds(seeds, preset="cpu")
    t = fx.effects["integrator, fixed depth"]["test"]
    assert t["ci95"][0] > 0 and t["p"] < 0.05 < t["p_holm"]
    ps = [fx.effects[n]["test"]["p"] for n in M.EFFECTS if n != "main runs' contrast"]
    assert t["p_holm"] == pytest.approx(min(1.0, 4 * min(ps)))
    words = str(M.word_factorial(fx))
    assert "none holds at the 5% level (the smallest, integrator, fixed depth" in words and "exploratory" not in words


def test_missing_cells_are_said_and_no_effect_is_computed():
    fx = M.factorial_over_seeds({0: _seed({"rk4_refined": 0.0, "euler_fixed": 0.05})}, preset="gpu")
    assert not fx.complete and fx.missing == ["rk4_fixed", "euler_refined"] and fx.effects == {}
    assert "cannot be told apart" in str(M.word_factorial(fx))
    assert "-" in str(M.factorial_table(fx))
    with pytest.raises(ValueError, match="sweeps_by_seed is empty"):
        M.factorial_over_seeds({})
    with pytest.raises(ValueError, match="unknown preset"):
        M.shipped_factorial("huge")


def test_a_cell_that_ships_no_folder_is_read_from_the_seeds_file(monkeypatch):
    """A preset may ship the main runs' folders only and keep the controls' seed-0 sweeps in the seeds file:
    shipped_factorial reads each cell of seed 0 from its shipped sweep, else from that file."""
    loss = {"rk4_refined": 0.00, "rk4_fixed": 0.01, "euler_refined": 0.03, "euler_fixed": 0.07}
    seed0, seed1 = _seed(loss), _seed({k: v + 0.01 for k, v in loss.items()})
    monkeypatch.setattr(MS, "shipped_sweep_file", lambda preset, run: {"rows": seed0[run], "n_test": 100}
                        if run in ("rk4_refined", "euler_fixed") else None)
    monkeypatch.setattr(MS, "shipped_seeds", lambda preset: [{"seed": 0, "sweeps": seed0}, {"seed": 1, "sweeps": seed1}])
    fx = M.shipped_factorial("gpu", fallback=None)
    assert fx.complete and fx.seeds == [0, 1] and fx.n_images == 100
    assert fx.effects["integrator, fixed depth"]["values"] == pytest.approx([6.0, 6.0])


# ----------------------------------------------------------------------------- the numbers the chapter quotes
CHAPTER = ROOT / "book" / "manifestation_invariance.ipynb"
GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")


def _markdown() -> str:
    return "\n".join(cell_source(c) for c in read_notebook(CHAPTER)["cells"] if c["cell_type"] == "markdown")


def _code() -> str:
    return "\n".join(cell_source(c) for c in read_notebook(CHAPTER)["cells"] if c["cell_type"] == "code")


def _three_seeds(euler_losses, rk4_losses):
    return {s: _pair(e, r) for s, (e, r) in enumerate(zip(euler_losses, rk4_losses))}


def _factorial(two_seeds: bool = True):
    loss = {"rk4_refined": 0.012, "rk4_fixed": 0.005, "euler_refined": 0.025, "euler_fixed": 0.061}
    seeds = {0: _seed(loss)}
    if two_seeds:
        seeds[1] = _seed({k: v + 0.004 for k, v in loss.items()})
    return M.factorial_over_seeds(seeds, preset="cpu")


def test_every_number_the_chapter_states_is_glued_from_its_cells():
    """Issue 50 item 3: the prose quotes every number it states from the cells that computed it (``{glue:md}``), so
    none can drift from its computation; a number typed into the prose (a decimal, a percentage, a thousands
    separator) fails here, outside formulas, code and the paper's section numbers.  Every name the prose quotes is one
    the chapter's cells glue: a missing one fails the book's build."""
    text = GLUE.sub(" ", _markdown())
    hidden = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<!--.*?-->|(?:Secs?\.|Sections?|Figures?|Tables?) "
                        r"[A-Z]?\d+(?:\.\d+)*(?:\([a-z]\))?|\d{4}-\d\d-\d\d", re.S)
    number = re.compile(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d+(?:\.\d+)?%)(?![\w])")
    typed = [m.group(0) for m in number.finditer(hidden.sub(" ", text))]
    assert set(typed) <= {"95%", "5%", "0.05"}, f"numbers typed into the prose, not glued: {typed}"
    used = set(GLUE.findall(_markdown()))
    by_seed = _three_seeds((0.08, 0.10, 0.015), (0.005, 0.01, 0.0))
    from cnet_lib.studies import manifestation_factorial as MF

    record = MF.shipped_record()
    analysis = MF.analyse(record)
    glued = {**M.facts(by_seed[0], M.over_seeds(by_seed), _factorial(), {r: 0.5 for r in M.CELLS.values()}, "cpu"),
             **book.paper_facts(by_seed, epochs=6), "planned_seeds": "12",
             **MF.facts(analysis, MF.post_hoc(record, analysis), record)}
    assert used <= set(glued), f"quoted and never glued: {sorted(used - set(glued))}"
    assert "book.glue_all(planned.facts(analysis, later, record))" in _code()
    assert "book.glue_all(manifestation.facts(sweeps, contrast, fx, roughness, preset=ctx.preset))" in _code()
    assert "book.glue_all(book.paper_facts(by_seed" in _code() and 'book.glue("planned_seeds"' in _code()


def test_the_words_the_prose_quotes_follow_the_numbers():
    """Where the prose's wording depends on the numbers (the contrast appears or not; in how many seeds; which seeds
    keep their accuracy; what Welch's test establishes; which factor carries more), the chapter quotes words that
    :func:`manifestation.facts` computes from the verdicts, on either side of each threshold."""
    holds = M.over_seeds(_three_seeds((0.08, 0.10, 0.09), (0.005, 0.01, 0.0)))
    f = M.facts(contrast=holds)
    assert f["n_seeds"] == "three" and f["euler_more"] == "in every seed"
    assert f["euler_kept"] == "the Euler-trained model loses its accuracy by the rule in every seed"
    assert f["seeds_test"].endswith("three seeds per method establish the paper's contrast.") and "95% interval [+" in \
        f["seeds_test"]
    mixed = M.over_seeds(_three_seeds((0.08, 0.0, 0.015), (0.005, 0.01, 0.0)))
    f = M.facts(contrast=mixed)
    assert f["euler_more"] == "in two of the three seeds"
    assert f["euler_kept"] == "on seeds 1 and 2 the Euler-trained model keeps its accuracy by the rule"
    assert f["seeds_test"].endswith("do not establish the paper's contrast.")
    opposite = M.facts(contrast=M.over_seeds(_three_seeds((0.0, 0.01, 0.0), (0.05, 0.06, 0.055))))
    assert opposite["seeds_test"].endswith("show the opposite of the paper's contrast.")
    one = M.facts(contrast=M.over_seeds({0: _pair(0.08, 0.0)}))
    assert one["n_seeds"] == "one" and "nothing to test" in one["seeds_test"]
    assert M.facts(_pair(0.08, 0.0))["seed0_contrast"] == "appears"
    assert M.facts(_pair(0.01, 0.0))["seed0_contrast"] == "does not appear"
    assert M.facts(_pair(0.08, 0.0, identity=0.65))["blocks_matter"] == "the blocks do not matter enough to judge"
    # integrator x refinement: which factor carries more, and what Holm's correction lets the seeds establish
    fx = M.facts(fx=_factorial())
    assert fx["fx_larger"] == "the integrator" and fx["fx_integrator"] == "3.4" and fx["fx_ref_rk4"] == "−0.7"
    assert fx["fx_seeds"] == "two" and fx["fx_established"].startswith("establish")
    assert M.facts(fx=_factorial(two_seeds=False))["fx_established"] == "cannot test either factor"
    refined = M.facts(fx=M.factorial_over_seeds({0: _seed({"rk4_refined": 0.0, "rk4_fixed": 0.06,
                                                          "euler_refined": 0.01, "euler_fixed": 0.07})}))
    assert refined["fx_larger"] == "refinement"
    gone = M.facts(fx=M.factorial_over_seeds({0: _seed({"rk4_refined": 0.0, "euler_fixed": 0.05})}))
    assert gone["fx_integrator"] == "—" and "incomplete" in gone["fx_larger"], "every name glued, even unmeasured"


def test_the_paper_s_numbers_beside_the_book_s_are_counted_from_the_trained_step():
    """book.paper_facts: the paper's Table 1 numbers as the paper prints them, and the book's cheaper graphs and Euler
    runs counted from the trained N_t of the sweeps (a graph the sweep lacks is a dash, not an error)."""
    rows = [{"kind": "trained", "scheme": "rk4_classic", "n_steps": 4, "n_basis": 4, "accuracy": 0.80, "n_parameters": 100},
            {"kind": "manifestation", "scheme": "rk4_38", "n_steps": 3, "n_basis": 4, "accuracy": 0.79},
            {"kind": "manifestation", "scheme": "euler", "n_steps": 8, "n_basis": 4, "accuracy": 0.77},
            {"kind": "compressed", "scheme": "rk4_classic", "n_steps": 2, "n_basis": 2, "accuracy": 0.75,
             "n_parameters": 60}]
    f = book.paper_facts({0: {"rk4_refined": rows}, 1: {"rk4_refined": rows}}, epochs=16)
    assert (f["paper_best"], f["paper_same11_loss"], f["paper_same6_loss"], f["paper_as_euler"]) == \
        ("93.70", "0.26", "1.42", "93.55")
    assert (f["nt"], f["nt_minus1_word"], f["same_minus1_38"], f["same_minus2_38"]) == ("4", "three", "1.0", "—")
    assert (f["proj2_acc"], f["proj2_delta"], f["proj2_params"], f["params"]) == ("75.0", "−5.0", "60", "100")
    assert (f["rke_times2"], f["euler_proj2_acc"], f["step_ratio"], f["epochs"]) == ("3.00", "—", "eight", "16")


def test_the_roughness_of_the_cells_that_ship():
    """θ(t)'s roughness of the cpu preset's four shipped models: refinement's copies stay close, pieces trained
    apart sit near √2 (the chapter quotes them)."""
    rough = M.shipped_roughness("cpu")
    assert set(rough) == set(M.CELLS.values())
    assert rough["rk4_refined"] < 0.7 and rough["euler_refined"] < 0.7
    assert 1.2 < rough["rk4_fixed"] < 1.7 and 1.2 < rough["euler_fixed"] < 1.7
    assert M.shipped_roughness("smoke") == {}, "nothing ships for smoke"
