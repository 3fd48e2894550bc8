"""The robustness study (:mod:`cnet_lib.studies.robustness`): quantization that keeps its promises, perturbations of
the stated size, paired statistics checked against hand-computed values, verdicts that follow the numbers (on one
pair of models and over training seeds, the trained model as the unit), results that survive a JSON round trip, the
cached study of the trained runs, the command line, the tables, sentences and figures, and the numbers the chapter's
prose quotes.  Tiny models on fake CIFAR: seconds."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from scipy import stats

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.core.models import ContinuousNet
from cnet_lib.core.odeblock import OdeBlock
from cnet_lib.images.runs import run_store as RS
from cnet_lib.runtime.settings import Settings
from cnet_lib.cli import robustness as robustness_cli
from cnet_lib.studies import robustness as R, stats as STATS
from cnet_lib import images as T

ROOT = Path(__file__).resolve().parents[1]

GRID = dict(sigmas=(0.1, 1.0), seeds=(0, 1), bits=(8, 4), quantization=("theta", "weights"), float_formats=("bf16",),
            input_noise=(0.5,), noise_seeds=(0, 1))


def _model(dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    return ContinuousNet((3, 4, 4), n_basis=2, scheme="rk4_classic").to(dtype).eval()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=64, n_test=48, seed=3)
    return root, load_dataset("cifar10", root)


# --------------------------------------------------------------------------- quantization
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_quantize_per_channel_is_a_symmetric_grid_per_channel(bits):
    torch.manual_seed(0)
    w = torch.randn(5, 3, 7, dtype=torch.float64) * torch.tensor([1e-3, 1.0, 10.0, 0.5, 2.0], dtype=torch.float64)[:, None, None]
    q = R.study.quantize_per_channel(w, bits)
    levels = 2 ** (bits - 1) - 1
    scale = w.abs().amax(dim=(1, 2), keepdim=True) / levels
    ints = q / scale
    assert torch.allclose(ints, ints.round(), atol=1e-9), "not on the per-channel grid"
    assert ints.abs().max() <= levels + 1e-9
    assert ((q - w).abs() <= scale / 2 + 1e-12).all(), "rounding error above half a step"
    # each channel's largest weight is kept exactly: its own scale is set by it
    assert torch.allclose(q.abs().amax(dim=(1, 2)), w.abs().amax(dim=(1, 2)), rtol=1e-12)
    assert q.dtype == w.dtype


def test_quantize_other_channel_dim_zero_slices_and_bad_bits():
    w = torch.tensor([[0.0, 1.0], [0.0, -4.0]])
    q = R.study.quantize_per_channel(w, 2, channel_dim=1)  # per column: the zero column stays zero
    assert torch.equal(q[:, 0], torch.zeros(2)) and torch.equal(q[:, 1], torch.tensor([0.0, -4.0]))
    with pytest.raises(ValueError, match="bits"):
        R.study.quantize_per_channel(w, 1)


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_a_vector_quantized_per_channel_comes_out_unchanged(bits):
    """One scale per entry: every entry is its own channel's largest and is kept exactly (also for
    values whose division and product by the scale would round: 0.1, 1/3, -7e-5, a subnormal)."""
    g = torch.Generator().manual_seed(bits)
    v = torch.cat([torch.randn(200, generator=g), torch.tensor([0.1, 1 / 3, -7e-5, 1e-40, 0.0, -0.0])])
    for dtype in (torch.float32, torch.float64):
        w = v.to(dtype)
        assert torch.equal(R.study.quantize_per_channel(w.reshape(-1, 1), bits).reshape(-1), w)


def _hand_quantize(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Per-row symmetric quantization, written out with Python floats."""
    levels = 2 ** (bits - 1) - 1
    out = []
    for row in w.double().reshape(w.shape[0], -1).tolist():
        amax = max(abs(x) for x in row)
        s = amax / levels
        out.append([0.0 if s == 0 else (math.copysign(amax, x) if abs(round(x / s)) >= levels else round(x / s) * s)
                    for x in row])
    return torch.tensor(out, dtype=torch.float64).reshape(w.shape)


def test_quantization_schemes_against_a_hand_computation():
    """(a) θ̂ only: the blocks' convolution coefficients per (β, output channel), nothing else changes;
    (b) every conv and linear weight per output channel, every 1-D tensor unchanged; float formats
    round every parameter."""
    model = _model(torch.float64)
    names = dict(model.named_parameters())
    theta = R.quantize_theta(model, 4)
    weights = R.quantize_weights(model, 4)
    conv_coeffs = [n for n in names if ".coeffs." in n and names[n].dim() >= 3]
    assert conv_coeffs and all("conv" in n for n in conv_coeffs)
    for scheme, copy_ in (("theta", theta), ("weights", weights)):
        for n, p in copy_.named_parameters():
            p0 = names[n]
            if n in conv_coeffs:  # (M, C_out, C_in, k, k): one scale per (β, output channel)
                rows = p0.reshape(p0.shape[0] * p0.shape[1], -1)
                assert torch.equal(p, _hand_quantize(rows, 4).reshape(p0.shape)), (scheme, n)
            elif scheme == "weights" and p0.dim() >= 2 and ".coeffs." not in n:  # stem, stitches, classifier
                assert torch.equal(p, _hand_quantize(p0, 4)), (scheme, n)
            else:  # vectors, the blocks' BatchNorm and gain coefficients, and (theta) everything outside θ̂
                assert torch.equal(p, p0), (scheme, n)
        assert all(torch.equal(b, b0) for b, b0 in zip(copy_.buffers(), model.buffers()))
    assert not torch.equal(weights.fc.weight, model.fc.weight) and torch.equal(theta.fc.weight, model.fc.weight)
    assert torch.equal(weights.fc.bias, model.fc.bias) and torch.equal(weights.head_norm.weight, model.head_norm.weight)
    bf = R.study.float_format_copy(model, "bf16")
    for p, p0 in zip(bf.parameters(), model.parameters()):
        assert torch.equal(p, p0.to(torch.bfloat16).double())
    with pytest.raises(ValueError, match="one of bf16, fp16"):
        R.study.float_format_copy(model, "int3")
    with pytest.raises(ValueError, match="scheme must be one of theta, weights"):
        R.study.model_bytes(model, "everything", 4)


def test_quantized_copies_leave_the_model_and_count_distinct_values():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}
    for q4 in (R.quantize_theta(model, 4), R.quantize_weights(model, 4)):
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items() if torch.is_tensor(v))
        for n, p in q4.named_parameters():
            if p.dim() >= 3 and ".coeffs." in n:
                for row in p.reshape(p.shape[0] * p.shape[1], -1):
                    assert row.unique().numel() <= 2 ** 4 - 1


def test_model_bytes():
    model = _model()
    n = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    assert R.study.model_bytes(model) == 4 * n + buffers
    assert R.study.model_bytes(model, "float", "bf16") == 2 * n + buffers
    conv = [p for name, p in model.named_parameters() if ".coeffs." in name and p.dim() >= 3]
    other = [p for name, p in model.named_parameters() if p.dim() >= 2 and ".coeffs." not in name]
    theta4 = buffers + 4 * (n - sum(p.numel() for p in conv)) + sum(
        math.ceil(p.numel() * 4 / 8) + 4 * p.shape[0] * p.shape[1] for p in conv)
    assert R.study.model_bytes(model, "theta", 4) == theta4
    weights4 = theta4 - 4 * sum(p.numel() for p in other) + sum(math.ceil(p.numel() * 4 / 8) + 4 * p.shape[0] for p in other)
    assert R.study.model_bytes(model, "weights", 4) == weights4
    assert R.study.model_bytes(model, "weights", 4) < R.study.model_bytes(model, "theta", 4) < R.study.model_bytes(model, "theta", 8)


# --------------------------------------------------------------------------- weight noise
def test_perturbation_has_the_stated_relative_size_and_touches_only_coefficients():
    model = _model(torch.float64)
    noisy = R.study.perturb_coefficients(model, 0.1, seed=7)
    coeff = {name for name, p in noisy.named_parameters() if any(p is q for q in R.study.coefficient_tensors(noisy))}
    assert coeff, "the model has coefficient tensors"
    for (name, p), p0 in zip(noisy.named_parameters(), model.parameters()):
        if name in coeff:
            assert (p - p0).norm().item() == pytest.approx(0.1 * p0.norm().item(), rel=1e-12)
        else:
            assert torch.equal(p, p0), f"{name} is not a coefficient tensor but changed"
    again = R.study.perturb_coefficients(model, 0.1, seed=7)
    other = R.study.perturb_coefficients(model, 0.1, seed=8)
    assert all(torch.equal(a, b) for a, b in zip(again.parameters(), noisy.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(other.parameters(), noisy.parameters()))
    same = R.study.perturb_coefficients(model, 0.0, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(same.parameters(), model.parameters()))
    n_blocks = sum(isinstance(m, OdeBlock) for m in model.modules())
    assert len(R.study.coefficient_tensors(model)) >= n_blocks
    with pytest.raises(ValueError, match="sigma"):
        R.study.perturb_coefficients(model, -0.1, seed=0)


# --------------------------------------------------------------------------- statistics
def test_paired_difference_by_hand():
    a = torch.tensor([1, 1, 0, 0, 1, 1, 1, 0], dtype=torch.bool)
    b = torch.tensor([0, 1, 0, 0, 1, 0, 1, 0], dtype=torch.bool)
    d = [1, 0, 0, 0, 0, 1, 0, 0]
    mean = sum(d) / 8
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 7)
    out = STATS.paired_difference(a, b)
    assert out["diff"] == pytest.approx(100 * mean) and out["se"] == pytest.approx(100 * sd / math.sqrt(8))
    z = mean / (sd / math.sqrt(8))
    assert out["p"] == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert out["ci95"][0] < out["diff"] < out["ci95"][1] and out["n"] == 8
    same = STATS.paired_difference(a, a)
    assert same["diff"] == 0 and same["p"] == 1.0


def test_mcnemar_exact_binomial():
    a = torch.tensor([1] * 8 + [0] * 2 + [1] * 5, dtype=torch.bool)
    b = torch.tensor([0] * 8 + [0] * 2 + [1] * 5, dtype=torch.bool)
    out = STATS.mcnemar(a, b)
    assert (out["only_a"], out["only_b"]) == (8, 0) and out["p"] == pytest.approx(2 / 2 ** 8)
    # 7 against 3 of 10 discordant images: p = 2 * P(X <= 3), X ~ Bin(10, 1/2) = 2 * 176 / 1024
    a = torch.tensor([1] * 7 + [0] * 3, dtype=torch.bool)
    assert STATS.mcnemar(a, ~a)["p"] == pytest.approx(2 * 176 / 1024)
    assert STATS.mcnemar(a, ~a)["p"] == STATS.mcnemar(~a, a)["p"]
    assert STATS.mcnemar(a, a) == {"only_a": 0, "only_b": 0, "p": 1.0}


def test_seed_spread_widens_the_comparison():
    images = {"diff": 2.0, "se": 1.0, "n": 1000, "p": 0.05, "ci95": (0.04, 3.96)}
    assert STATS.with_seed_variance(images, [0.7], [0.6])["se"] == pytest.approx(1.0)  # one seed: images only
    out = STATS.with_seed_variance(images, [0.5, 0.6], [0.5, 0.5])
    v_seeds = 0.005 * 1e4 / 2  # the variance of (0.5, 0.6) in points², over two seeds
    assert out["se"] == pytest.approx(math.sqrt(1.0 + v_seeds)) and out["se_images"] == 1.0
    df = (1.0 + v_seeds) ** 2 / (1.0 / 999 + v_seeds ** 2 / 1)
    assert out["df"] == pytest.approx(df)
    assert out["p"] == pytest.approx(2 * stats.t.sf(2.0 / out["se"], df))
    half = stats.t.ppf(0.975, df) * out["se"]
    assert out["ci95"] == pytest.approx((2.0 - half, 2.0 + half))
    assert out["p"] > 0.5  # two seeds that disagree by 10 points settle nothing


def test_holm_adjustment():
    # sorted p: 0.01 (x3), 0.02 (x2 -> 0.04), 0.04 (x1 -> 0.04, monotone)
    assert STATS.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert STATS.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert STATS.holm([]) == []


def test_holm_and_mcnemar_agree_with_statsmodels_and_scipy():
    from statsmodels.stats.multitest import multipletests

    g = torch.Generator().manual_seed(5)
    for m in (1, 2, 5, 13):
        p = (torch.rand(m, generator=g, dtype=torch.float64) ** 3).tolist()
        assert STATS.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)
    for only_a, only_b in ((8, 0), (7, 3), (3100, 3100), (3000, 3200), (0, 1)):
        a = torch.tensor([1] * only_a + [0] * only_b + [1] * 4, dtype=torch.bool)
        b = torch.tensor([0] * only_a + [1] * only_b + [1] * 4, dtype=torch.bool)
        out = STATS.mcnemar(a, b)
        assert (out["only_a"], out["only_b"]) == (only_a, only_b)
        assert out["p"] == pytest.approx(min(1.0, 2 * stats.binom.cdf(min(only_a, only_b), only_a + only_b, 0.5)), rel=1e-9)


# --------------------------------------------------------------------------- the verdict
def _cond(kind, level, *hits):
    return R.study.Condition(kind, level, [torch.tensor(h, dtype=torch.bool) for h in hits])


def _study(n=400, drop_a=0, drop_b=0, identity_hits=0, kind="quantized_theta", level=4, seeds=1):
    """Two models right on every image; under ``(kind, level)`` a loses ``drop_a`` images, b ``drop_b``
    (the same images for every seed)."""
    def rows(drop):
        hits = [0] * drop + [1] * (n - drop)
        return [_cond("clean", None, [1] * n), _cond(kind, level, *[hits] * seeds),
                _cond("identity", None, [1] * identity_hits + [0] * (n - identity_hits))]
    return {"a": rows(drop_a), "b": rows(drop_b)}


def test_the_primary_test_decides_and_is_fixed():
    assert R.PRIMARY == R.study.PrimaryTest("quantized_theta", 4, min_effect=1.0, alpha=0.05)
    assert R.judge(_study(drop_a=2, drop_b=60), "a", "b").outcome == "supported"
    assert R.judge(_study(drop_a=60, drop_b=2), "a", "b").outcome == "contradicted"
    # 1 image of 400 (0.25 points): the interval lies within ±1 point
    assert R.judge(_study(n=4000, drop_a=10, drop_b=11), "a", "b").outcome == "equivalent"
    assert R.judge(_study(n=400, drop_a=5, drop_b=8), "a", "b").outcome == "inconclusive"
    # a significant difference of 0.5 points on 40,000 images: below the stated minimum
    assert R.judge(_study(n=40000, drop_a=0, drop_b=200), "a", "b").outcome == "below minimum"
    # secondary rows never decide: a huge difference under weight noise with the primary absent
    noise = _study(drop_a=2, drop_b=60, kind="weight_noise", level=0.1, seeds=2)
    j = R.judge(noise, "a", "b")
    assert j.outcome == "unmeasured" and j.rows[0]["role"] == "secondary" and j.rows[0]["significant"]
    assert "not measured; no verdict" in R.word_verdict(j, width=None).splitlines()[-1]


def test_decide_by_hand():
    assert R.study.decide(1.5, (0.2, 2.8), 1.0) == "supported"
    assert R.study.decide(0.8, (0.2, 1.4), 1.0) == "below minimum"
    assert R.study.decide(0.5, (0.2, 0.8), 1.0) == "below minimum"  # significant and small: not "equivalent"
    assert R.study.decide(-1.2, (-2.0, -0.4), 1.0) == "contradicted"
    assert R.study.decide(0.1, (-0.5, 0.7), 1.0) == "equivalent"
    assert R.study.decide(0.5, (-0.5, 1.5), 1.0) == "inconclusive"


def test_random_perturbations_with_one_seed_are_unmeasured():
    study = _study(drop_a=2, drop_b=60, kind="weight_noise", level=0.1, seeds=1)
    j = R.judge(study, "a", "b")
    row = j.rows[0]
    assert row["role"] == "unmeasured" and row["p"] is None and row["p_holm"] is None and not row["significant"]
    words = R.word_verdict(j, width=None).splitlines()
    assert any(w.startswith("Unmeasured (weight noise): weight noise σ = 0.1") for w in words)
    table = R.drops_table(j)
    assert "—" in table and "1 (rule: 16)" in table, "no interval, and the draws said against the rule"


def test_holm_runs_within_each_family():
    n = 400
    hits = lambda drop: [0] * drop + [1] * (n - drop)  # noqa: E731
    study = {"a": [_cond("clean", None, [1] * n), _cond("quantized_theta", 4, hits(2)), _cond("quantized_theta", 8, hits(2)),
                   _cond("quantized_weights", 8, hits(2)), _cond("input_noise", 0.1, hits(2), hits(2))],
             "b": [_cond("clean", None, [1] * n), _cond("quantized_theta", 4, hits(30)), _cond("quantized_theta", 8, hits(9)),
                   _cond("quantized_weights", 8, hits(12)), _cond("input_noise", 0.1, hits(12), hits(12))]}
    j = R.judge(study, "a", "b")
    rows = {r["name"]: r for r in j.rows}
    assert [r["role"] for r in j.rows] == ["primary", "secondary", "secondary", "secondary"]
    q8, w8, noise = rows["θ̂ in 8 bits"], rows["all weights in 8 bits"], rows["input noise τ = 0.1"]
    assert q8["family"] == w8["family"] == "quantization" and noise["family"] == "input noise"
    assert [q8["p_holm"], w8["p_holm"]] == pytest.approx(STATS.holm([q8["p"], w8["p"]]))
    assert noise["p_holm"] == noise["p"]  # alone in its family
    assert rows["θ̂ in 4 bits"]["p_holm"] == rows["θ̂ in 4 bits"]["p"]  # the primary test is not adjusted


def test_verdict_words_name_the_models_behind_them_and_a_clean_difference():
    j = R.judge(_study(drop_a=2, drop_b=60), "a", "b")
    words = R.word_verdict(j, {"a": "RK4", "b": "Euler"}, width=None).splitlines()
    assert words[-1].startswith("VERDICT (one trained model per method, so this is about these two models, not yet "
                                "about the training methods; primary test θ̂ in 4 bits, minimum effect 1 point, α = 0.05)")
    assert "the paper's expectation holds for these models" in words[-1]
    assert "differ significantly" not in words[-1]
    assert any("removing its blocks costs 100.0 points" in w for w in words)
    study = _study(drop_a=2, drop_b=60)
    study["b"][0] = _cond("clean", None, [0] * 100 + [1] * 300)  # b right on 100 images fewer
    j = R.judge(study, "a", "b")
    assert (j.clean_test["only_a"], j.clean_test["only_b"]) == (100, 0) and j.clean_test["p"] < 1e-20
    assert "Their clean accuracies differ significantly (100.0% against 75.0%" in R.word_verdict(j, width=None).splitlines()[-1]
    three = R.judge(_study(drop_a=2, drop_b=60), "a", "b", models_per_method=3)
    assert R.word_verdict(three, width=None).splitlines()[-1].startswith("VERDICT (3 trained models per method;")
    for outcome, study in (("contradicted", _study(drop_a=60, drop_b=2)), ("inconclusive", _study(drop_a=5, drop_b=8)),
                           ("equivalent", _study(n=4000, drop_a=10, drop_b=11))):
        text = R.word_verdict(R.judge(study, "a", "b"), width=None).splitlines()[-1]
        assert {"contradicted": "does not hold", "inconclusive": "inconclusive",
                "equivalent": "no difference of 1 point or more"}[outcome] in text


def test_judge_refuses_when_the_blocks_do_not_matter():
    j = R.judge(_study(drop_a=2, drop_b=60, identity_hits=395), "a", "b")
    assert not j.blocks_matter and j.outcome == "supported"  # the numbers are reported, the claim is not made
    assert "no verdict: removing the blocks costs less than 10 points" in R.word_verdict(j, width=None).splitlines()[-1]


def test_judge_takes_the_identity_row_of_the_same_model():
    study = _study(drop_a=2, drop_b=60)
    study["b on rk4"] = [c for c in study["b"] if c.kind != "identity"]
    j = R.judge(study, "a", "b on rk4", identity_of={"b on rk4": "b"})
    assert j.gaps["b on rk4"] == pytest.approx(100.0) and j.blocks_matter


def test_methods_are_judged_with_the_training_seed_as_the_unit():
    """The primary row over training seeds: one drop per trained model, Welch's t-test of the methods' mean drops."""
    one = R.robustness_over_seeds({0: _study(drop_a=2, drop_b=60)}, "a", "b")
    assert one.outcome == "one seed" and one.primary["p"] is None
    assert "no claim about the training methods is made" in str(R.word_over_seeds(one))
    studies = {seed: _study(drop_a=da, drop_b=db) for seed, (da, db) in enumerate(((2, 40), (6, 52), (4, 30)))}
    m = R.robustness_over_seeds(studies, "a", "b")
    p = m.primary
    da, db = [0.5, 1.5, 1.0], [10.0, 13.0, 7.5]
    assert p["drops_a"] == pytest.approx(da) and p["drops_b"] == pytest.approx(db)
    assert p["diff"] == pytest.approx(sum(db) / 3 - sum(da) / 3)
    assert p["p"] == pytest.approx(stats.ttest_ind(db, da, equal_var=False).pvalue)
    va, vb = stats.tvar(da) / 3, stats.tvar(db) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert p["ci95"] == pytest.approx((p["diff"] - half, p["diff"] + half))
    assert m.outcome == "supported" and m.blocks_matter
    text = str(R.word_over_seeds(m))
    assert text.startswith("VERDICT (training methods, 3 training seeds per method (seeds 0, 1, 2)")
    assert "a loses 1.00 [0.50, 1.50]" in text and "the expectation is supported" in text


# --------------------------------------------------------------------------- over training seeds (compact rows)
def _seed_study(clean_a, clean_b, theta4_a, theta4_b, noise_a, noise_b):
    """One seed's study: the clean, θ̂-in-4-bits, weight-noise (two draws) and blocks-removed rows, as
    accuracies (the drops follow from them)."""
    def model(clean, theta4, noise):
        return [{"kind": "clean", "level": None, "accuracies": [clean]},
                {"kind": "quantized_theta", "level": 4, "accuracies": [theta4]},
                {"kind": "weight_noise", "level": 0.1, "accuracies": list(noise)},
                {"kind": "weight_noise", "level": 0.3, "accuracies": [noise[0] - 0.1, noise[1] - 0.3 * theta4]},
                {"kind": "float_format", "level": "bf16", "accuracies": [clean - 0.001]},
                {"kind": "identity", "level": None, "accuracies": [0.2]}]
    return {"rk4_refined": model(clean_a, theta4_a, noise_a), "euler_fixed": model(clean_b, theta4_b, noise_b)}


def _seed_studies():
    return {0: _seed_study(0.72, 0.70, 0.715, 0.66, (0.70, 0.69), (0.66, 0.65)),
            1: _seed_study(0.73, 0.71, 0.722, 0.68, (0.71, 0.70), (0.68, 0.66)),
            2: _seed_study(0.71, 0.70, 0.705, 0.665, (0.69, 0.70), (0.65, 0.66))}


def test_robustness_rows_over_seeds_use_the_trained_model_as_the_unit():
    from statsmodels.stats.multitest import multipletests

    r = R.robustness_over_seeds(_seed_studies())
    assert r.seeds == [0, 1, 2] and r.blocks_matter
    primary = r.rows[0]
    assert primary["role"] == "primary" and primary["name"] == "θ̂ in 4 bits"
    da, db = [0.5, 0.8, 0.5], [4.0, 3.0, 3.5]
    assert primary["drops_a"] == pytest.approx(da) and primary["drops_b"] == pytest.approx(db)
    assert primary["p"] == pytest.approx(stats.ttest_ind(db, da, equal_var=False).pvalue)
    assert r.outcome == "supported"
    quant = [row for row in r.rows if row["family"] == "quantization" and row["role"] == "secondary"]
    assert len(quant) == 1 and quant[0]["p_holm"] == pytest.approx(quant[0]["p"])  # alone in its family here
    noise = next(row for row in r.rows if row["kind"] == "weight_noise")
    assert noise["drops_a"][0] == pytest.approx(100 * (0.72 - 0.695))  # the noise draws averaged inside the model
    for family in ("weight noise", "quantization"):
        members = [row for row in r.rows if row["family"] == family and row["role"] == "secondary"]
        adjusted = multipletests([row["p"] for row in members], method="holm")[1]
        assert [row["p_holm"] for row in members] == pytest.approx(list(adjusted)), family
    assert len([row for row in r.rows if row["family"] == "weight noise"]) == 2
    table = str(R.over_seeds_table(r))
    assert "3 training seeds per method" in table and "PRIMARY" in table and "the training seed as the unit" in table
    primary_line = next(line for line in table.splitlines() if "PRIMARY" in line)
    assert "one test" in primary_line, "the primary row's p is unadjusted: its Holm column says so (issue 30)"
    assert "supported" in R.word_over_seeds(r) and "3 training seeds per method" in R.word_over_seeds(r)


def test_condition_objects_and_their_compact_form_agree_and_one_seed_has_no_p():
    def as_conditions(study):
        return {label: [R.study.Condition(c["kind"], c["level"], [torch.tensor([1.0] * round(1e4 * a) + [0.0] * (10000 - round(1e4 * a)))
                                                            for a in c["accuracies"]]) for c in conds]
                for label, conds in study.items()}
    compact = R.robustness_over_seeds(_seed_studies())
    objects = R.robustness_over_seeds({s: as_conditions(v) for s, v in _seed_studies().items()})
    assert [r["p"] for r in compact.rows] == pytest.approx([r["p"] for r in objects.rows])
    one = R.robustness_over_seeds({0: _seed_studies()[0]})
    assert one.outcome == "one seed" and all(r["p"] is None for r in one.rows)
    assert "1 training seed per method" in str(R.over_seeds_table(one))
    assert "no claim about the training methods" in R.word_over_seeds(one)
    with pytest.raises(ValueError, match="at least one training seed"):
        R.robustness_over_seeds({})


# --------------------------------------------------------------------------- storage
@pytest.mark.parametrize("n", [1, 8, 13, 1000])
def test_outcomes_round_trip(n):
    g = torch.Generator().manual_seed(n)
    x = torch.rand(n, generator=g) > 0.5
    assert torch.equal(R.study.unpack_outcomes(R.study.pack_outcomes(x), n), x)


# --------------------------------------------------------------------------- the study on a model
def test_robustness_rows_on_a_model(data):
    _, d = data
    model = _model()
    conds = R.study.robustness_rows(model, d.test_x, d.test_y, d.mean, d.std, grid=GRID, batch_size=16)
    assert [(c.kind, c.level) for c in conds] == [
        ("clean", None), ("weight_noise", 0.1), ("weight_noise", 1.0), ("quantized_theta", 8), ("quantized_theta", 4),
        ("quantized_weights", 8), ("quantized_weights", 4), ("float_format", "bf16"), ("input_noise", 0.5),
        ("identity", None), ("identity_input_noise", 0.5)]
    assert [len(c.correct) for c in conds] == [1, 2, 2, 1, 1, 1, 1, 1, 2, 1, 2]
    assert all(c.correct[0].shape == (48,) and c.correct[0].dtype == torch.bool for c in conds)
    assert conds[0].bytes == R.study.model_bytes(model) and conds[4].bytes == R.study.model_bytes(model, "theta", 4)
    assert conds[6].bytes == R.study.model_bytes(model, "weights", 4) and conds[7].bytes == R.study.model_bytes(model, "float", "bf16")
    again = R.study.robustness_rows(model, d.test_x, d.test_y, d.mean, d.std, grid=GRID, batch_size=48, baselines=False)
    for c1, c2 in zip(conds, again):  # seeds fix every draw; the batch size changes nothing
        assert all(torch.equal(x, y) for x, y in zip(c1.correct, c2.correct))
    assert len(again) == 9
    rows = R.study.summarise(conds)
    assert rows[1]["seeds"] == 2 and rows[1]["min"] <= rows[1]["accuracy"] <= rows[1]["max"]
    back = R.study.conditions_from_json(json.loads(json.dumps(R.study.conditions_to_json(conds))))
    assert [(c.kind, c.level, c.bytes) for c in back] == [(c.kind, c.level, c.bytes) for c in conds]
    assert all(torch.equal(x, y) for c1, c2 in zip(conds, back) for x, y in zip(c1.correct, c2.correct))


def test_robustness_study_evaluates_other_graphs_and_restores_the_model(data):
    _, d = data
    models = {"m": _model(seed=1), "k": _model(seed=2)}
    study = R.study.robustness_study(models, d.test_x, d.test_y, d.mean, d.std, grid=dict(GRID, sigmas=(0.1,), seeds=(0,)),
                                graphs={"m": ("m", None, None), "k": ("k", None, None), "m on euler": ("m", "euler", 1)})
    assert list(study) == ["m", "k", "m on euler"]
    assert not any(c.kind == "identity" for c in study["m on euler"])  # the same model's baseline is not repeated
    assert models["m"].manifestation == [("rk4_classic", 2)] * 3
    j = R.judge(study, "m", "m on euler", identity_of={"m on euler": "m"})
    assert j.gaps["m on euler"] is not None


# --------------------------------------------------------------------------- command line and cache
def _train(root, out, scheme, n_steps):
    cfg = T.TrainConfig(dataset="cifar10", data_dir=str(root), channels=(3, 4, 4), batch_size=32, lr=0.05,
                        lr_schedule="constant", scheme=scheme, n_basis=n_steps, refine_at=(), epochs=1, device="cpu",
                        progress=False, out_dir=str(out))
    T.train(cfg)
    return out / "checkpoint.pt"


def test_command_line(data, tmp_path, capsys):
    root, _ = data
    a = _train(root, tmp_path / "rk4", "rk4_classic", 1)
    b = _train(root, tmp_path / "euler", "euler", 2)
    out = tmp_path / "rob.json"
    argv = [str(a), str(b), "--graph", "rk4_classic", "--sigmas", "0.1", "--seeds", "0", "--bits", "8",
            "--float-formats", "--input-noise", "--out", str(out), "--quiet", "--device", "cpu"]
    assert robustness_cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "VERDICT" in text
    payload = json.loads(out.read_text())
    assert set(payload["rows"]) == {"rk4", "euler", "rk4 on rk4_classic", "euler on rk4_classic"}
    assert payload["grid"]["sigmas"] == [0.1] and payload["environment"]["device"] == "cpu" and payload["n_test"] == 48
    kinds = [r["kind"] for r in payload["rows"]["euler"]]
    assert kinds == ["clean", "weight_noise", "quantized_theta", "quantized_weights", "identity"]
    back = R.study.conditions_from_json(payload["study"]["euler"])
    assert back[0].accuracies()[0] == pytest.approx(payload["rows"]["euler"][0]["accuracy"])
    assert robustness_cli.main([str(tmp_path / "missing.pt"), "--quiet"]) == 1
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("graph", [["rk4_classic", "2.5"], ["rk4_classic", "0"], ["rk4_classic", "4", "8"]])
def test_a_wrong_graph_option_says_what_it_takes(graph, tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        robustness_cli.main([str(tmp_path / "x.pt"), "--graph", *graph])
    said = capsys.readouterr().err
    assert err.value.code == 2 and "whole number >= 1" in said and "--graph rk4_classic 8" in said, said
    assert "Traceback" not in said and "invalid literal" not in said


def test_study_is_cached_and_keyed_by_the_grid(tmp_path, monkeypatch):
    root = tmp_path / "data"
    write_fake_cifar(root, n_train=64, n_test=32, seed=0)
    runs = RS.trained_runs(Settings(preset="smoke", runs_dir=tmp_path / "runs", data_dir=str(root), device="cpu"), verbose=False,
                          use_shipped=False, n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
    grid = dict(GRID, sigmas=(0.1,), seeds=(0,), bits=(8,), float_formats=(), input_noise=())
    first = R.run(runs, grid, verbose=False)
    assert set(first) == set(R.study.GRAPHS)
    calls = []
    monkeypatch.setattr(R.study, "robustness_study", lambda *a, **k: calls.append(1) or {})
    again = R.run(runs, grid, verbose=False)
    assert calls == [] and set(again) == set(first)
    for label in first:
        assert all(torch.equal(x, y) for c1, c2 in zip(first[label], again[label]) for x, y in zip(c1.correct, c2.correct))
    R.run(runs, dict(grid, sigmas=(0.2,)), verbose=False)
    assert calls == [1], "a different grid must not reuse the cached study"


# --------------------------------------------------------------------------- tables and figures
def test_tables_and_figures_show_the_study(data):
    _, d = data
    models = {"rk4_refined": _model(seed=1), "euler_fixed": _model(seed=2)}
    study = R.study.robustness_study(models, d.test_x, d.test_y, d.mean, d.std, grid=GRID)
    j = R.judge(study, "rk4_refined", "euler_fixed")
    table = R.drops_table(j)
    assert table.count("\n") == len(j.rows) + 2 and "weight noise σ = 0.1" in table and "p, Holm" in table
    assert table.splitlines()[2].split()[:5] == ["θ̂", "in", "4", "bits", "(PRIMARY)"]
    assert "one test" in table.splitlines()[2], "the primary row's p is not Holm-adjusted, and its cell says so"
    assert "A = RK4-trained (refined), B = Euler-trained (fixed depth)" in table
    text = R.word_verdict(j)
    assert max(len(line) for line in text.splitlines()) <= 92 and "VERDICT" in text
    assert text.replace("\n  ", " ").replace("\n", " ") == " ".join(R.word_verdict(j, width=None).splitlines())
    sizes = R.size_table(study)
    assert "θ̂ in 4 bits" in sizes and "bf16" in sizes and f"{R.study.model_bytes(models['euler_fixed'], 'weights', 4):,}" in sizes
    fig = R.fig_weight_noise(study)
    assert [t.name for t in fig.data] == ["RK4-trained (refined)", "Euler-trained (fixed depth)"]
    assert list(fig.data[0].x) == [0.1, 1.0] and fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [0.1, 1.0] and list(fig.layout.xaxis.ticktext) == ["0.1", "1"]
    # issue 53: accuracies in percent, as the chapter's prose and tables say them
    assert fig.data[0].y[0] == pytest.approx(100 * R.study.summarise(study["rk4_refined"])[1]["accuracy"])
    assert fig.layout.yaxis.title.text == "held-out accuracy (%)"
    quant = R.fig_quantization(study)
    # issue 53: horizontal bars, one row per format, so that every format's name and every bar's value reads on a phone
    assert quant.data[0].orientation == "h" and list(quant.data[0].text)[0] == f"{quant.data[0].x[0]:.1f}"
    assert list(quant.data[0].y) == ["float32", "θ̂ in 8 bits", "θ̂ in 4 bits", "weights in 8 bits", "weights in 4 bits",
                                     "bf16"]
    noise = R.fig_input_noise(study)
    assert [t.name for t in noise.data][:2] == ["RK4-trained (refined)", "RK4-trained (refined), blocks removed"]
    drops = R.fig_drops(j)
    assert list(drops.data[0].x) == pytest.approx([r["drop_a"] for r in j.rows if r["role"] != "unmeasured"])
    assert drops.data[0].y[0] == "PRIMARY: θ̂ in 4 bits" and drops.data[0].orientation == "h"
    explorer = R.fig_explorer(study)
    assert not explorer.layout.sliders, "a menu, whose labels all show on a phone (issue 30)"
    labels = [b.label for b in explorer.layout.updatemenus[0].buttons]
    assert labels == ["σ = 0.1", "σ = 1", "θ̂ in 8 bits", "θ̂ in 4 bits", "weights in 8 bits", "weights in 4 bits", "bf16",
                      "τ = 0.5"]
    assert len(explorer.data) == 2 * len(labels)
    shown = [t for t in explorer.data if t.visible]
    assert len(shown) == 2 and shown[0].y[1] == pytest.approx(fig.data[0].y[0])
    for f in (fig, quant, noise, drops):  # long run labels: the legend in rows below the plot
        assert f.layout.legend.orientation == "h" and f.layout.legend.y < 0
    assert explorer.layout.legend.x == 1.02  # the legend in a column on the right
    from cnet_lib.runtime.rich_text import run_color, run_dash

    # the Euler model on the RK4 graph is the Euler model: its colour, dashed (not RK4's colour)
    other = {"euler_fixed": _model(seed=2)}
    both = R.study.robustness_study(other, d.test_x, d.test_y, d.mean, d.std, grid=GRID,
                               graphs={"euler_fixed": ("euler_fixed", None, None),
                                       "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)})
    lines = R.fig_weight_noise(both).data
    assert lines[0].line.color == lines[1].line.color == run_color("euler_fixed") != run_color("rk4_refined")
    assert (lines[0].line.dash, lines[1].line.dash) == (None, "dash") == (run_dash("euler_fixed"), "dash")


def test_the_study_refuses_a_bad_grid(data):
    _, d = data
    model = _model()
    for bad, match in ((dict(quantization=("all",)), r"quantization\[0\] must be one of theta, weights"),
                       (dict(float_formats=("fp8",)), r"float_formats\[0\] must be one of bf16, fp16"),
                       (dict(bits=(1,)), r"bits\[0\] must be an integer >= 2"),
                       (dict(seeds=()), "seeds is empty")):
        with pytest.raises(ValueError, match=match):
            R.study.robustness_rows(model, d.test_x, d.test_y, d.mean, d.std, grid={**GRID, **bad})


# --------------------------------------------------------------------------- noise draws (issue 51, item 4)
def _draws(sd: float, k: int, centre: float = 0.7) -> list:
    """``k`` accuracies with sample standard deviation exactly ``sd`` (a fraction)."""
    z = torch.randn(k, generator=torch.Generator().manual_seed(k), dtype=torch.float64)
    z = (z - z.mean()) / z.std(unbiased=True)
    return (centre + sd * z).tolist()


def test_the_noise_draw_rule_of_the_analysis_plan():
    """The plan's rule: 16 draws per weight-noise level and 8 per input-noise level keep the 95% Monte-Carlo half-width
    of a row's mean within 1 point wherever the standard deviation across draws is at most 0.018 (weight) or 0.01
    (input); a row that spreads more is wide, and a row with fewer draws than the rule is wide when its half-width
    exceeds 1 point."""
    assert R.NOISE_DRAWS == {"weight_noise": 16, "input_noise": 8}
    assert R.study.WIDE_SD == {"weight_noise": 0.018, "input_noise": 0.01} and R.study.MC_HALF_WIDTH == 1.0
    for kind in R.NOISE_DRAWS:
        k, sd = R.NOISE_DRAWS[kind], R.study.WIDE_SD[kind]
        at = R.study.draw_spread(_draws(0.999 * sd, k), kind)
        assert at["draws"] == k and at["sd"] == pytest.approx(0.999 * sd) and not at["wide"]
        assert at["half_width"] == pytest.approx(100 * stats.t.ppf(0.975, k - 1) * 0.999 * sd / math.sqrt(k))
        assert at["half_width"] <= 1
        assert R.study.draw_spread(_draws(1.05 * sd, k), kind)["wide"], "more spread than the rule's SD: wide"
    short = R.study.draw_spread(_draws(0.002, 3), "weight_noise")
    assert short["rule"] == 16 and short["half_width"] < 1 and not short["wide"]
    assert R.study.draw_spread(_draws(0.01, 3), "weight_noise")["wide"], "3 draws, half-width above 1 point"
    assert R.study.draw_spread([0.7], "input_noise") == {"draws": 1, "rule": 8, "sd": None, "half_width": None, "wide": False}
    with pytest.raises(ValueError, match="not drawn at random"):
        R.study.draw_spread([0.7, 0.71], "quantized_theta")
    wide = R.study.draw_spread(_draws(0.03, 16), "weight_noise")
    assert R.show.draws_cell([wide, R.study.draw_spread(_draws(0.001, 16), "weight_noise")]) == f"16; wide, ±{wide['half_width']:.1f}"
    assert R.show.draws_cell([short, short]) == "3 (rule: 16)" and R.show.draws_cell([None, None]) == "—"


def test_the_presets_grids_and_the_draws_they_have():
    """The cpu and paper presets' robustness grids have the plan's draws; the gpu preset's shipped study keeps its 3 and
    2 (recomputing it does not fit a CPU session: its models are evaluated on 5,000 images, and only seed 0's
    checkpoints ship), and its rows say so."""
    for preset in ("cpu", "paper"):
        g = R.preset_grid(preset)
        assert len(g["seeds"]) == R.NOISE_DRAWS["weight_noise"] and len(g["noise_seeds"]) == R.NOISE_DRAWS["input_noise"]
    g = R.preset_grid("gpu")
    assert (len(g["seeds"]), len(g["noise_seeds"])) == (3, 2)
    rows = [{"kind": "weight_noise", "level": 0.1, "accuracies": _draws(0.01, 3)}]
    sp = R.study.draw_spread(rows[0]["accuracies"], "weight_noise")
    assert R.show.draws_cell([sp]).startswith("3 (rule: 16); wide")


# --------------------------------------------------------------------------- the chapter's numbers
def _named(study: dict) -> dict:
    """A study of models ``a`` and ``b`` (:func:`_study`) as the refined RK4 model's and the Euler model's."""
    return {"rk4_refined": study["a"], "euler_fixed": study["b"]}


def _facts(verdict, over, study=None) -> dict:
    run = T.StudyRun.__new__(T.StudyRun)  # only its config is read: the preset and the training seed
    run.config = T.TrainConfig(preset="smoke", seed=0)
    return R.facts(study or {verdict.a: []}, verdict, over, {"rk4_refined": run})


def test_the_chapter_quotes_only_numbers_its_cells_compute():
    """Every number the chapter's prose states is glued from :func:`facts` (``{glue:md}`name```), every fact is quoted,
    and no result is typed: outside glue, formulas and code the prose holds no decimal, percentage or number with
    thousands separators but the confidence level and the normal quantile of its box."""
    text = "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / "robustness.ipynb")["cells"]
                     if c["cell_type"] == "markdown")
    quoted = set(re.findall(r"\{glue:md\}`(\w+)`", text))
    given = _facts(R.judge(_study(drop_a=2, drop_b=60), "a", "b"), R.robustness_over_seeds(_seed_studies()))
    assert quoted == set(given), (quoted ^ set(given))
    prose = re.sub(r"<!-- chapter card.*?end of the chapter card -->|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)"
                   r"|Secs?\. \d+(?:\.\d+)*", " ", text, flags=re.S)  # the paper's section numbers are no results
    typed = re.findall(r"(?<![\w.])[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d+(?:\.\d+)?%)(?![\w])", prose)
    assert set(typed) <= {"95%", "1.96"}, typed


def test_the_chapters_words_follow_its_numbers():
    """The worded facts on both sides of what they say: the floor of the primary test, the perturbations that hurt and
    whether they differ after Holm, one pair's significant row that the seeds do not bear out, and one seed."""
    three = R.robustness_over_seeds(_seed_studies())
    small = R.judge(_named(_study(n=4000, drop_a=10, drop_b=11)), "rk4_refined", "euler_fixed")  # 0.25, 0.275 points
    f = _facts(small, three)
    assert f["rob_outcome"] == "the whole interval lies within ±1: no difference of that size"
    assert f["rob_a"] == "0.25" and f["rob_diff"] == "+0.03" and f["rob_seeds"] == "three"
    assert f["rob_over"].startswith("Over the three training seeds the drops are 0.60 and 3.50 points on average")
    assert "(the expectation is supported)" in f["rob_over"], "the primary row over the seeds: 3.5 − 0.6 points"
    assert f["rob_floor"] == "", "the primary perturbation costs the Euler models 3.5 points over the seeds: no floor"
    hurt = next(r for r in three.rows if (r["kind"], r["level"]) == ("weight_noise", 0.3))
    assert max(hurt["a"]["mean"], hurt["b"]["mean"]) >= R.show.HURTS and "weight noise of σ = 0.3 costs" in f["rob_hurt"]
    assert ("no difference significant after Holm" in f["rob_hurt"]) == (not hurt["significant"])
    mild = {s: {label: [dict(c, accuracies=[a + 0.0 for a in c["accuracies"]]) if c["kind"] != "quantized_theta"
                        else dict(c, accuracies=[next(x for x in conds if x["kind"] == "clean")["accuracies"][0] - 0.001])
                        for c in conds] for label, conds in study.items()} for s, study in _seed_studies().items()}
    floor = _facts(small, R.robustness_over_seeds(mild))["rob_floor"]
    assert floor.startswith("The primary perturbation costs each model less than the minimum effect (0.10 and 0.10")
    one = _facts(small, R.robustness_over_seeds({0: _seed_studies()[0]}))
    assert one["rob_over"].startswith("With one training seed per method there is no test of the training methods")
    assert one["rob_single_pair"] == "" and one["rob_seeds"] == "one"
    # a secondary row significant on one pair (bf16: the Euler model loses 40 images more of 400) ...
    pair = _named(_study(drop_a=2, drop_b=2))
    for label, lost in (("rk4_refined", 0), ("euler_fixed", 40)):
        pair[label].append(_cond("float_format", "bf16", [0] * lost + [1] * (400 - lost)))
    pair_verdict = R.judge(pair, "rk4_refined", "euler_fixed")
    assert next(r for r in pair_verdict.rows if r["kind"] == "float_format")["significant"]
    # ... which the seeds do not bear out (bf16 costs 0.1 points in every seed): said, with the seeds' interval
    said = _facts(pair_verdict, three)["rob_single_pair"]
    assert said.startswith("On training seed 0, storing every parameter in bf16 costs the Euler-trained (fixed depth) "
                           "model 10.00 points more than the RK4-trained (refined) model"), said
    assert "while over the three seeds that difference is +0.00 points" in said
    bf16_everywhere = {s: {label: [dict(c, accuracies=[c["accuracies"][0] - (0.1 if label == "euler_fixed" else 0)])
                                   if c["kind"] == "float_format" else c for c in conds] for label, conds in study.items()}
                       for s, study in _seed_studies().items()}
    borne_out = R.robustness_over_seeds(bf16_everywhere)
    assert next(r for r in borne_out.rows if r["kind"] == "float_format")["ci95"][0] > 0
    assert _facts(pair_verdict, borne_out)["rob_single_pair"] == "", "the seeds bear it out: nothing to warn about"
