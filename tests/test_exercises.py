"""The exercise checks: right answers pass; shortcuts and almost-right answers fail; hints are
graded; a solution cell never replaces a reader's own function."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.func import functional_call

from cnet_lib.book.exercises import (framework as core, image_exercises as I, pendulum_exercises as P, reset_hints,
    solution)
from cnet_lib.teacher import keys

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_hints():
    reset_hints()
    yield
    reset_hints()


def _verdict(capsys, check, fn, **kw):
    ok = check(fn, **kw)
    return ok, capsys.readouterr().out


# ----------------------------------------------------------------------------- right answers
def observed_order(dts, errors):
    return float(np.polyfit(np.log(dts), np.log(errors), 1)[0])


def rk_step(f, t, x, h, tableau):
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    return x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))


def embedded_step(f, t, x, h, tableau, b_hat):
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    return (x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k)),
            h * sum(float(b - c) * ki for b, c, ki in zip(tableau.b, b_hat, k)))


def refine_piecewise_linear(coeffs):
    if coeffs.shape[0] == 1:
        return torch.cat([coeffs, coeffs])
    out = torch.empty((2 * coeffs.shape[0] - 1, *coeffs.shape[1:]), dtype=coeffs.dtype)
    out[0::2], out[1::2] = coeffs, (coeffs[:-1] + coeffs[1:]) / 2
    return out


def _global_error(n_steps_of):
    from cnet_lib.pendulum import exact_solution, rollout

    def global_error(G, scheme, dt, t_final):
        x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
        path = rollout(G, x0, scheme, dt, n_steps_of(t_final / dt))
        return float(np.linalg.norm(path[-1].numpy() - exact_solution(t_final)))

    return global_error


def _euler_block(h_of, t_of):
    def euler_block_as_resnet(block, x):
        m = block.n_basis
        h = h_of(block)
        for k in range(m):
            t = t_of(k, h, block)
            x = x + h * (block.gain(t) * functional_call(block.residual, block.theta(t), (x,)))
        return x

    return euler_block_as_resnet


def parameters_after_refinement(model):
    return model.n_parameters() + sum(p.numel() for b in model.blocks for p in b.parameters() if p.requires_grad)


def ideal_speedup(n):
    n = list(n)
    return len(n) * n[-1] / sum(n)


def identity_gap(rows):
    trained = next(r for r in rows if r["kind"] == "trained")
    ident = next(r for r in rows if r["kind"] == "identity")
    return 100.0 * (trained["accuracy"] - ident["accuracy"])


def quantize_per_channel(w, bits):
    levels = 2 ** (bits - 1) - 1
    scale = w.abs().flatten(1).amax(dim=1).reshape(-1, *[1] * (w.dim() - 1)) / levels
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (torch.round(w / safe).clamp(-levels, levels) * scale).to(w.dtype)


RIGHT = [
    (P.check_observed_order, observed_order),
    (P.check_rk_step, rk_step),
    (P.check_embedded_step, embedded_step),
    (P.check_global_error, _global_error(round)),
    (I.check_euler_block_as_resnet, _euler_block(lambda b: b.T / b.n_basis, lambda k, h, b: k * h)),
    (I.check_parameters_after_refinement, parameters_after_refinement),
    (I.check_refine_piecewise_linear, refine_piecewise_linear),
    (I.check_ideal_speedup, ideal_speedup),
    (I.check_identity_gap, identity_gap),
    (I.check_quantize_per_channel, quantize_per_channel),
]


@pytest.mark.parametrize("check,fn", RIGHT, ids=[c.__name__ for c, _ in RIGHT])
def test_right_answers_pass(capsys, check, fn):
    ok, out = _verdict(capsys, check, fn)
    assert ok, out
    assert "✅ pass" in out


# ----------------------------------------------------------------------------- shortcuts
def _shortcuts():
    from cnet_lib import integrate
    from cnet_lib.book import paper_claims as PC
    from cnet_lib.studies.refinement import study as RT
    from cnet_lib.runtime.rich_text import find_row
    from cnet_lib.pendulum import exact_solution, global_error, one_step, rollout

    def rk_by_integrate(f, t, x, h, tab):
        return integrate(f, x, tab, 1, t_span=(t, t + h))

    def rk_by_torchdiffeq(f, t, x, h, tab):
        from torchdiffeq import odeint

        return odeint(f, x, torch.tensor([t, t + h], dtype=x.dtype), method="euler")[-1]

    def rk_by_one_step(f, t, x, h, tab):
        return one_step(lambda z: f(t, z), x, tab, h, backend="cnet")

    def ge_by_library(G, scheme, dt, t_final):
        return global_error(rollout(G, torch.tensor(exact_solution(0.0)), scheme, dt, round(t_final / dt)), t_final)

    def block_call(block, x):
        return block(x)

    def block_manifested(block, x):
        with block.manifested("euler", block.n_basis):
            return block(x)

    def refine_a_copy(model):  # the cell above the exercise, copied
        return copy.deepcopy(model).refine().n_parameters()

    def speedup_by_study(n):
        history = [{"n_steps": [v], "train_seconds": 1.0, "epoch": e} for e, v in enumerate(n)]
        return RT.refinement_cost(history)["ideal"]

    def quant_by_library(w, bits):
        from cnet_lib.studies.robustness.study import quantize_per_channel as q

        return q(w, bits)

    def gap_by_find_row(rows):
        return 100 * (find_row(rows, kind="trained")["accuracy"] - find_row(rows, kind="identity")["accuracy"])

    def rk_in_a_thread(f, t, x, h, tab):  # a thread of its own does not escape the guard
        import threading

        out = []
        worker = threading.Thread(target=lambda: out.append(integrate(f, x, tab, 1, t_span=(t, t + h))))
        worker.start()
        worker.join()
        return out[0] if out else x

    def embedded_by_integrate(f, t, x, h, tab, b_hat):
        step = integrate(f, x, tab, 1, t_span=(t, t + h))
        return step, step - x

    def refine_by_library(coeffs):
        from cnet_lib import PiecewiseLinear

        return PiecewiseLinear(coeffs.shape[0]).refine()[1].apply(coeffs)

    return [
        (P.check_observed_order, keys.reference_observed_order, "reference_observed_order"),
        (P.check_observed_order, lambda d, e: keys.reference_observed_order(d, e), "reference_observed_order"),
        (P.check_rk_step, keys.reference_rk_step, "reference_rk_step"),
        (P.check_rk_step, rk_by_integrate, "integrate"),
        (P.check_rk_step, rk_by_torchdiffeq, "torchdiffeq"),
        (P.check_rk_step, rk_by_one_step, "one_step"),
        (P.check_global_error, keys.reference_global_error, "reference_global_error"),
        (P.check_global_error, ge_by_library, "cnet_lib.pendulum.odenet.global_error"),
        (I.check_euler_block_as_resnet, keys.reference_euler_block_as_resnet, "reference_euler_block_as_resnet"),
        (I.check_euler_block_as_resnet, block_call, "OdeBlock.forward"),
        (I.check_euler_block_as_resnet, block_manifested, "OdeBlock.forward"),
        (I.check_parameters_after_refinement, refine_a_copy, "refine"),
        (I.check_parameters_after_refinement, keys.reference_parameters_after_refinement, "reference_parameters"),
        (I.check_ideal_speedup, speedup_by_study, "cnet_lib.studies.refinement.study.refinement_cost"),
        (I.check_ideal_speedup, PC.schedule_ideal, "cnet_lib.studies.refinement.study.schedule_ideal"),
        (I.check_identity_gap, gap_by_find_row, "cnet_lib.runtime.rich_text.find_row"),
        (I.check_identity_gap, keys.reference_identity_gap, "reference_identity_gap"),
        (I.check_quantize_per_channel, quant_by_library, "cnet_lib.studies.robustness.study.quantize_per_channel"),
        (P.check_rk_step, rk_in_a_thread, "integrate"),
        (P.check_embedded_step, embedded_by_integrate, "integrate"),
        (P.check_embedded_step, keys.reference_embedded_step, "reference_embedded_step"),
        (I.check_refine_piecewise_linear, refine_by_library, "refine"),
    ]


@pytest.mark.parametrize("case", range(22))
def test_shortcuts_into_the_library_are_rejected(capsys, case):
    shortcuts = _shortcuts()
    assert len(shortcuts) == 22
    check, fn, named = shortcuts[case]
    ok, out = _verdict(capsys, check, fn)
    assert not ok, f"{check.__name__} accepted a call into {named}"
    assert "❌ fail" in out and "your function calls" in out and named in out, out


# ----------------------------------------------------------------------------- almost right
def _almost_right():
    def two_point(dts, errors):
        return math.log(errors[-2] / errors[-1]) / math.log(dts[-2] / dts[-1])

    def swapped_axes(dts, errors):
        return 1.0 / observed_order(dts, errors)

    def rk_without_h_in_time(f, t, x, h, tab):
        k = []
        for i in range(tab.stages):
            X = x + sum(h * float(tab.a[i][j]) * k[j] for j in range(i))
            k.append(f(t + float(tab.c[i]), X))
        return x + h * sum(float(b) * ki for b, ki in zip(tab.b, k))

    def params_doubled(model):
        return 2 * model.n_parameters()

    def params_without_gains(model):
        return model.n_parameters() + sum(c.numel() for b in model.blocks for c in b.coeffs.values())

    def params_with_buffers(model):
        return model.n_parameters() + sum(t.numel() for b in model.blocks for t in b.state_dict().values())

    def gap_by_position(rows):
        return 100 * (rows[1]["accuracy"] - rows[-1]["accuracy"])

    def gap_as_fraction(rows):
        return identity_gap(rows) / 100

    def speedup_integer(n):
        return len(n) * n[-1] // sum(n)

    def quant_one_scale(w, bits):  # one scale for the whole tensor
        levels = 2 ** (bits - 1) - 1
        scale = w.abs().max() / levels
        return torch.round(w / scale).clamp(-levels, levels) * scale

    def quant_unsigned_levels(w, bits):  # 2**bits levels on each side
        return quantize_per_channel(w, bits + 1)

    def quant_nan_on_zeros(w, bits):  # divides by a zero scale
        levels = 2 ** (bits - 1) - 1
        scale = w.abs().flatten(1).amax(dim=1).reshape(-1, *[1] * (w.dim() - 1)) / levels
        return torch.round(w / scale).clamp(-levels, levels) * scale

    def quant_float64(w, bits):  # loses the input's dtype
        return quantize_per_channel(w.double(), bits)

    def embedded_twice(f, t, x, h, tab, b_hat):  # right values from 2s evaluations
        import copy as _copy
        from types import SimpleNamespace

        low = rk_step(f, t, x, h, SimpleNamespace(stages=tab.stages, a=tab.a, b=b_hat, c=tab.c))
        high = rk_step(f, t, x, h, tab)
        return high, high - low

    def embedded_sign(f, t, x, h, tab, b_hat):  # low minus high
        high, err = embedded_step(f, t, x, h, tab, b_hat)
        return high, -err

    def refine_repeat(coeffs):  # as for piecewise-constant θ
        return torch.repeat_interleave(coeffs, 2, dim=0)

    def refine_no_constant_case(coeffs):  # 2M - 1 = 1 coefficient for M = 1
        out = torch.empty((2 * coeffs.shape[0] - 1, *coeffs.shape[1:]), dtype=coeffs.dtype)
        out[0::2], out[1::2] = coeffs, (coeffs[:-1] + coeffs[1:]) / 2
        return out

    def speedup_max(n):  # the largest N_t, not the last
        return len(n) * max(n) / sum(n)

    return [
        (P.check_observed_order, two_point, "two-point slope"),
        (P.check_observed_order, swapped_axes, "log Δt against log error"),
        (P.check_rk_step, rk_without_h_in_time, "stage times t + c_i"),
        (P.check_global_error, _global_error(int), "int() instead of round()"),
        (I.check_euler_block_as_resnet, _euler_block(lambda b: 1 / b.n_basis, lambda k, h, b: k * h), "h = 1/M"),
        (I.check_euler_block_as_resnet, _euler_block(lambda b: b.T / b.n_basis, lambda k, h, b: (k + 1) * h),
         "θ read at the end of the step"),
        (I.check_parameters_after_refinement, params_doubled, "everything doubled"),
        (I.check_parameters_after_refinement, params_without_gains, "skip gains forgotten"),
        (I.check_parameters_after_refinement, params_with_buffers, "BatchNorm statistics counted"),
        (I.check_ideal_speedup, speedup_integer, "integer division"),
        (I.check_identity_gap, gap_by_position, "rows by position"),
        (I.check_identity_gap, gap_as_fraction, "a fraction, not points"),
        (I.check_quantize_per_channel, quant_one_scale, "one scale for the whole tensor"),
        (I.check_quantize_per_channel, quant_unsigned_levels, "2^bits levels"),
        (I.check_quantize_per_channel, quant_nan_on_zeros, "division by a zero scale"),
        (I.check_quantize_per_channel, quant_float64, "dtype not kept"),
        (P.check_global_error, _global_error(math.ceil), "ceil() where t_final/dt lands a hair above a whole number"),
        (P.check_embedded_step, embedded_twice, "2s evaluations of the rate"),
        (P.check_embedded_step, embedded_sign, "the estimate's sign"),
        (I.check_refine_piecewise_linear, refine_repeat, "each coefficient copied"),
        (I.check_refine_piecewise_linear, refine_no_constant_case, "M = 1"),
        (I.check_ideal_speedup, speedup_max, "max(n) for the last N_t"),
    ]


@pytest.mark.parametrize("case", range(22))
def test_almost_right_answers_fail(capsys, case):
    almost = _almost_right()
    assert len(almost) == 22
    check, fn, what = almost[case]
    ok, out = _verdict(capsys, check, fn)
    assert not ok, f"{check.__name__} accepted an almost-right answer ({what})"
    assert "❌ fail" in out


def test_the_float_step_time_is_right_because_the_block_reads_it_exactly(capsys):
    """The chapter says a float k*h reads the piece it means; the check must agree (on T != 1)."""
    from fractions import Fraction

    exact = _euler_block(lambda b: b.T / b.n_basis, lambda k, h, b: Fraction(k, b.n_basis) * Fraction(b.T))
    floaty = _euler_block(lambda b: b.T / b.n_basis, lambda k, h, b: k * h)
    assert I.check_euler_block_as_resnet(exact) and I.check_euler_block_as_resnet(floaty)
    assert any(r["args"][0]["T"] != 1 for r in I.EULER_BLOCK_AS_RESNET.public())


# ----------------------------------------------------------------------------- hints
def test_hints_are_graded_nudge_first(capsys):
    def wrong(dts, errors):
        return 1.0

    outs = []
    for _ in range(4):
        _, out = _verdict(capsys, P.check_observed_order, wrong)
        outs.append(out)
    levels = [next(int(n) for n in range(1, 3) if f"hint {n} of 2" in o) for o in outs]
    assert levels == [1, 1, 2, 2]
    assert P.OBSERVED_ORDER_HINTS[0] in outs[0] and P.OBSERVED_ORDER_HINTS[1] not in outs[0]
    assert "hint=2" in outs[0], "the first hint says how to ask for the next"
    assert "polyfit" not in " ".join(P.OBSERVED_ORDER_HINTS), "no hint is the solution's code"


def test_a_hint_can_be_asked_for(capsys):
    _, out = _verdict(capsys, P.check_rk_step, lambda f, t, x, h, tab: x, hint=2)
    assert P.RK_STEP_HINTS[1] in out and P.RK_STEP_HINTS[0] not in out


def test_an_unfinished_stub_gets_no_hint_and_counts_no_failure(capsys):
    def stub(dts, errors):
        """Task."""
        raise NotImplementedError("todo")

    for _ in range(3):
        _, out = _verdict(capsys, P.check_observed_order, stub)
        assert "not done yet" in out and "hint 1 of" not in out
    _, out = _verdict(capsys, P.check_observed_order, lambda d, e: 1.0)
    assert "hint 1 of 2" in out


# ----------------------------------------------------------------------------- the guard itself
def test_the_guard_catches_aliases_and_leaves_other_code_alone(capsys):
    from cnet_lib.book.exercises.framework import Case, Forbidden, check

    def secret(x):
        return 2 * x

    alias = secret
    assert not check(lambda x: alias(x), lambda x: 2 * x, [1, 2], name="double",
                     forbidden=[Forbidden(functions=(secret,), why="Double it yourself.")])
    assert "Double it yourself." in capsys.readouterr().out
    assert check(lambda x: x + x, lambda x: 2 * x, [Case((1,)), 3], name="double",
                 forbidden=[Forbidden(functions=(secret,))])
    import sys

    assert sys.getprofile() is None, "the guard switches itself off"


def test_student_functions_get_copies_of_the_cases(capsys):
    """A function that changes its input cannot change the cases (or the next check's)."""
    from cnet_lib.book.exercises.framework import Case, check

    rows = [1, 2, 3]
    assert check(lambda r: r.clear() or 0, lambda r: 0, [Case((rows,))], name="mutating")
    assert rows == [1, 2, 3]


# ----------------------------------------------------------------------------- solution cells
def test_solution_stands_in_only_for_an_unfinished_stub(capsys):
    ns: dict = {}
    exec("def f(x):\n    'Task.'\n    raise NotImplementedError('todo')", ns)
    exec("from cnet_lib.book.exercises import solution\n@solution\ndef f(x):\n    return 2 * x", ns)
    assert ns["f"](3) == 6, "the stub is replaced by the solution"
    exec("def f(x):\n    return x + 100", ns)  # the reader's own code
    exec("from cnet_lib.book.exercises import solution\n@solution\ndef f(x):\n    return 2 * x", ns)
    assert ns["f"](3) == 103, "Run all keeps the reader's function"
    assert "your own f is kept" in capsys.readouterr().out
    assert core.is_stub(lambda: (_ for _ in ()).throw(NotImplementedError)) is False
    assert solution.__module__ == "cnet_lib.book.exercises.framework"


def test_run_all_keeps_a_readers_answer_in_a_chapter():
    """The chapter as Colab's "Run all" runs it, with a wrong answer typed into the stub cell:
    the solution cell below must not replace it, so the check fails on the reader's answer."""
    from nbmake.nb_run import NotebookRun

    from cnet_lib.book.notebook_cells import cell_tags, read_notebook, write_notebook

    src = ROOT / "book" / "how_to_use.ipynb"
    nb = read_notebook(src)
    stub = next(c for c in nb["cells"] if "exercise" in cell_tags(c))
    stub["source"] = "def observed_order(dts, errors):\n    return 1.0\n"
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "how_to_use.ipynb"
        write_notebook(nb, path)
        result = NotebookRun(path, default_timeout=300).execute()
    assert result.error is None, result.error and result.error.summary
    text = "".join(o.get("text", "") for c in result.nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "your own observed_order is kept" in text
    assert "❌ fail: observed_order" in text and "✅ pass" not in text


# ----------------------------------------------------------------------------- what a failure says (issue 43)
def _near_misses():
    from classroom import CODES

    return [(name, tag, code) for name, tags in CODES.items() for tag, code in tags.items()]


@pytest.mark.parametrize("name,tag,code", _near_misses(), ids=[f"{n}-{t}" for n, t, _ in _near_misses()])
def test_a_near_miss_fails_its_public_check_with_the_hint_aimed_at_it(capsys, name, tag, code):
    from cnet_lib.book.exercises import EXERCISES, check_exercise

    ex = EXERCISES[name]
    ns: dict = {}
    exec(code, ns)
    ok, out = _verdict(capsys, lambda fn: check_exercise(ex, fn), ns[name])
    assert not ok and "hint 1 of" in out, out
    assert ex.near_miss(tag).hint in out, f"{name}: {tag} gets another hint:\n{out}"


def _other_mistakes():
    from classroom import OTHER_MISTAKES

    return [(name, label, code) for name, d in OTHER_MISTAKES.items() for label, code in d.items()]


@pytest.mark.parametrize("name,label,code", _other_mistakes(), ids=[f"{n}-{t}" for n, t, _ in _other_mistakes()])
def test_a_mistake_no_near_miss_names_gets_the_first_hint_not_another_mistakes(capsys, name, label, code):
    """Issue 54: a failed public case gave the hints of every near miss it catches, joined ("Or: ..."), whatever
    mistake the student made; now the hint of the near miss whose values the student's are, else the first hint."""
    from cnet_lib.book.exercises import EXERCISES, check_exercise

    ex = EXERCISES[name]
    ns: dict = {}
    exec(code, ns)
    reset_hints()
    ok, out = _verdict(capsys, lambda fn: check_exercise(ex, fn), ns[name])
    assert not ok and f"hint 1 of {len(ex.hints)}: {ex.hints[0]}" in out, out
    assert "Or:" not in out and not any(m.hint in out for m in ex.near_misses), out


def test_a_failure_shows_the_first_element_that_differs_never_two_equal_prints(capsys):
    from cnet_lib.teacher.keys import EMBEDDED_FLIPPED

    ns: dict = {}
    exec(EMBEDDED_FLIPPED, ns)
    _, out = _verdict(capsys, P.check_embedded_step, ns["embedded_step"])
    line = next(ln for ln in out.splitlines() if "expected" in ln)
    assert line.strip().startswith("returned[1] at index"), out
    expected, got = line.split("expected ")[1].split(", got ")
    assert float(expected) == -float(got) != 0, line

    def nan_on_zeros(w, bits):
        levels = 2 ** (bits - 1) - 1
        scale = w.abs().flatten(1).amax(dim=1).reshape(-1, *[1] * (w.dim() - 1)) / levels
        return (torch.round(w / scale).clamp(-levels, levels) * scale).to(w.dtype)

    _, out = _verdict(capsys, I.check_quantize_per_channel, nan_on_zeros)
    assert "at index (1, 0): expected 0.0, got nan" in out, out


def test_hints_name_the_call_that_exists_where_the_check_runs(capsys):
    """In the book a failure names check_rk_step(rk_step, hint=2); in a student copy, whose checks are the grader's,
    grader.check("rk_step", hint=2): the copy has no check_rk_step."""
    from cnet_lib.book.exercises import Notebook

    _, out = _verdict(capsys, P.check_rk_step, lambda f, t, x, h, tab: x)
    assert "check_rk_step(rk_step, hint=2)" in out
    reset_hints()

    def rk_step(f, t, x, h, tableau):
        raise NotImplementedError("write your code here, in place of this line")

    grader = Notebook("pendulum_integrators")
    grader.check("rk_step", global_env={"rk_step": rk_step})
    stub = capsys.readouterr().out
    grader.check("rk_step", global_env={"rk_step": lambda f, t, x, h, tab: x})
    out = capsys.readouterr().out
    assert 'grader.check("rk_step", hint=1)' in stub and 'grader.check("rk_step", hint=2)' in out, stub + out
    assert "check_rk_step(" not in stub + out


def test_a_tableau_with_other_weights_says_what_they_reach_and_the_line_is_the_students(capsys, tmp_path):
    """Reusing rk_step for the embedded weights with dataclasses.replace: the error says the weights' order and
    what to do, and the line it names is the student's own, not Python's generated __init__ ("line 8: ")."""
    import importlib.util

    (tmp_path / "reuse.py").write_text('''import dataclasses


def rk_step(f, t, x, h, tableau):
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    return x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))


def embedded_step(f, t, x, h, tableau, b_hat):
    high = rk_step(f, t, x, h, tableau)
    low = rk_step(f, t, x, h, dataclasses.replace(tableau, b=tuple(b_hat)))
    return high, high - low
''')
    spec = importlib.util.spec_from_file_location("reuse", tmp_path / "reuse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, out = _verdict(capsys, P.check_embedded_step, module.embedded_step)
    assert "reach order 1: declare that order for them" in out, out
    assert "(line 16: low = rk_step(f, t, x, h, dataclasses.replace(tableau, b=tuple(b_hat))))" in out, out
