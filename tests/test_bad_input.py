"""Validation at the boundary: every bad input, and the message it gets (the book's page *Faults and bad
input*, ``book/faults.md``, shows them as a table).  Every check happens before any expensive work (a config
with a typo must fail before a data set is loaded)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from cnet_lib.images.data.datasets import DatasetNotFoundError
from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.training.evaluation import manifestation_sweep
from cnet_lib.images.runs import run_loading as SR, run_store as RS, study_inputs as SI
from cnet_lib.images.training import train_loop as TL, train_state as TS
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as ST
from cnet_lib.cli import robustness as robustness_cli, sweep as sweep_cli, train as train_cli
from cnet_lib.pendulum import config_for
from cnet_lib.studies import manifestation as M, robustness
from cnet_lib import (ContinuousNet, MaxStepsError, OdeBlock, get_scheme, images as T, integrate, integrate_adaptive,
    pendulum as P)

NAN = float("nan")

# (what the README shows, a call, the exception, a fragment of its message)
CASES = [
    ('TrainConfig(scheme="rk4")', lambda: T.TrainConfig(scheme="rk4"), ValueError, "ambiguous"),
    ('TrainConfig(scheme="rk5")', lambda: T.TrainConfig(scheme="rk5"), ValueError, "unknown scheme 'rk5'; valid names are"),
    ('TrainConfig(basis="hat")', lambda: T.TrainConfig(basis="hat"), ValueError, "basis must be one of piecewise_constant"),
    ('TrainConfig(dataset="mnist")', lambda: T.TrainConfig(dataset="mnist"), ValueError, "dataset must be one of cifar10"),
    ('TrainConfig(lr=nan)', lambda: T.TrainConfig(lr=NAN), ValueError, "lr must be a finite number > 0, got nan (e.g. lr=0.1)"),
    ('TrainConfig(lr=-0.1)', lambda: T.TrainConfig(lr=-0.1), ValueError, "lr must be a finite number > 0, got -0.1"),
    ('TrainConfig(momentum=1.5)', lambda: T.TrainConfig(momentum=1.5), ValueError, "momentum must be a finite number >= 0 and < 1"),
    ('TrainConfig(channels=(16, 0, 64))', lambda: T.TrainConfig(channels=(16, 0, 64)), ValueError,
     "channels[1] must be an integer >= 1, got 0"),
    ('TrainConfig(n_basis=0)', lambda: T.TrainConfig(n_basis=0), ValueError, "n_basis must be an integer >= 1"),
    ('TrainConfig(epochs=2.5)', lambda: T.TrainConfig(epochs=2.5), TypeError, "epochs must be an integer, got 2.5"),
    ('TrainConfig(refine_at=(3, 1))', lambda: T.TrainConfig(refine_at=(3, 1)), ValueError, "refine_at must be increasing"),
    ('TrainConfig(n_train=0)', lambda: T.TrainConfig(n_train=0), ValueError, "n_train must be an integer >= 1"),
    ('TrainConfig(device="gpu0")', lambda: T.TrainConfig(device="gpu0"), ValueError, "device 'gpu0' is not a torch device"),
    ('CNET_PRESET=fast', lambda: Settings.from_environment({"CNET_PRESET": "fast"}), ValueError,
     "unknown preset 'fast'; choose one of smoke, cpu, gpu, paper"),
    ('CNET_THREADS=zero', lambda: Settings.from_environment({"CNET_THREADS": "zero"}), ValueError,
     "CNET_THREADS='zero' must be a positive integer (e.g. CNET_THREADS=1)"),
    ('Settings(threads=0)', lambda: Settings(threads=0), ValueError, "threads must be an integer >= 1 or None, got 0"),
    ('load_dataset("cifar10", "/nowhere", download=False)', lambda: load_dataset("cifar10", "/nowhere", download=False),
     DatasetNotFoundError, "In Google Colab"),
    ('make_data(dt_data=0)', lambda: P.make_data(dt_data=0), ValueError, "dt_data must be a finite number > 0, got 0.0"),
    ('make_data(-0.01, T_data=-10)', lambda: P.make_data(-0.01, T_data=-10), ValueError, "dt_data must be a finite number > 0"),
    ('make_data(0.01, T_data=0.015)', lambda: P.make_data(0.01, T_data=0.015), ValueError, "must be a positive integer"),
    ('exact_solution(1.0, g=nan)', lambda: P.exact_solution(1.0, g=NAN), ValueError, "g must be a finite number > 0, got nan"),
    ('exact_solution(1.0, rho0=math.pi)', lambda: P.exact_solution(1.0, rho0=math.pi), ValueError, "|ρ0| < π"),
    ('exact_solution([0.0, inf])', lambda: P.exact_solution([0.0, math.inf]), ValueError, "t must hold finite times"),
    ('train_odenet(data, "euler", n_iters=-5)', lambda: P.train_odenet(P.make_data(0.1, 1.0), "euler", n_iters=-5),
     ValueError, "n_iters must be an integer >= 0"),
    ('config_for("cpu", n_iters=-1)', lambda: config_for("cpu", n_iters=-1), ValueError, "n_iters must be an integer >= 0"),
    ('integrate(f, x0, "euler", n_steps=0)', lambda: integrate(lambda t, x: x, torch.ones(1), "euler", n_steps=0), ValueError,
     "n_steps must be >= 1"),
    ('integrate(f, x0, "euler", 4, t_span=(0.0, nan))',
     lambda: integrate(lambda t, x: x, torch.ones(1), "euler", 4, t_span=(0.0, NAN)), ValueError,
     "t_span must be two different finite times"),
    ('get_scheme("rk4")', lambda: get_scheme("rk4"), ValueError, "'rk4_classic'"),
    ('integrate_adaptive(f, x0, "rk4_classic", rtol=1e-3, atol=1e-3)',
     lambda: integrate_adaptive(lambda t, x: -x, torch.ones(1), "rk4_classic", rtol=1e-3, atol=1e-3), ValueError,
     "adaptive steps need an embedded pair (an error estimate), such as 'bosh3' or 'dopri5'"),
    ('integrate_adaptive(f, x0, "dopri5", rtol=0, atol=0)',
     lambda: integrate_adaptive(lambda t, x: -x, torch.ones(1), "dopri5", rtol=0, atol=0), ValueError,
     "rtol and atol are both 0: no step can meet a zero tolerance"),
    ('integrate_adaptive(f, x0, "dopri5", rtol=1e-12, atol=1e-12, max_steps=5)',
     lambda: integrate_adaptive(lambda t, x: -x, torch.ones(1), "dopri5", rtol=1e-12, atol=1e-12, max_steps=5),
     MaxStepsError, "loosen the tolerances (raise rtol or atol) or allow more steps (raise max_steps)"),
    ('integrate_adaptive(f, x0, "dopri5", rtol=1e-3, atol=1e-3, norm="l2")',
     lambda: integrate_adaptive(lambda t, x: -x, torch.ones(1), "dopri5", rtol=1e-3, atol=1e-3, norm="l2"), ValueError,
     "norm must be one of max, rms (how the error norm treats a batch)"),
    ('OdeBlock(R, 2, epsilon=nan)', lambda: OdeBlock(torch.nn.Linear(2, 2), 2, epsilon=NAN), ValueError,
     "epsilon must be a finite number, got nan"),
    ('ContinuousNet(channels=(16, 32), n_basis=[1, 2, 3])', lambda: ContinuousNet(channels=(16, 32), n_basis=[1, 2, 3]),
     ValueError, "n_basis has 3 entries but the model has 2 OdeBlocks"),
]



def _sweep(n_images: int = 4, **grid):
    torch.manual_seed(0)
    model = ContinuousNet(channels=(2, 4), n_basis=4, scheme="euler").eval()
    x, y = torch.zeros(n_images, 3, 32, 32, dtype=torch.uint8), torch.zeros(n_images, dtype=torch.long)
    return manifestation_sweep(model, x, y, torch.zeros(3), torch.ones(3), progress=False, **grid)


SMOKE = Settings(preset="smoke", device="cpu")
_RUN = SR.StudyRun("rk4_refined", T.TrainConfig(preset="smoke"), ContinuousNet(channels=(2, 4)), [], Path("."))

# public functions and live apps of the image study (issue 18): each refuses nonsense before any work
CASES += [
    ('sample_batch(cfg, settings, n=0)', lambda: SI.sample_batch(image_runs("smoke")["rk4_refined"], SMOKE, n=0), ValueError,
     "n must be an integer >= 1, got 0 (e.g. n=64)"),
    ('load_dataset("cifar10", n_train=-5)', lambda: load_dataset("cifar10", "/nowhere", n_train=-5), ValueError,
     "n_train must be an integer >= 1, got -5"),
    ('manifestation_sweep(model, ..., n_steps=(1.5,))', lambda: _sweep(n_steps=(1.5,)), TypeError,
     "n_steps[0] must be an integer, got 1.5"),
    ('manifestation_sweep(model, ..., compress=(4,))', lambda: _sweep(compress=(4,)), ValueError,
     "compress holds M = 4, but the model has M = 4 basis functions: compressing means fewer, so give values from 1 to 3"),
    ('manifestation_sweep(model, ..., batch_size=0)', lambda: _sweep(batch_size=0), ValueError,
     "batch_size must be an integer >= 1, got 0"),
    ('manifestation_sweep(model, x[:0], y[:0], ...)', lambda: _sweep(0), ValueError,
     "a sweep needs test images and one label per image, got 0 images and 0 labels (e.g. n_test=2000)"),
    ('model.project(99)', lambda: ContinuousNet(channels=(2, 4), n_basis=2).project(99), ValueError,
     "project compresses θ(t): n_basis must be an integer from 1 to this block's M = 2, got 99 (to grow M, use refine())"),
    ('trained_runs(settings, runs=["rk4"])', lambda: RS.trained_runs(SMOKE, runs=["rk4"]), ValueError,
     "unknown run 'rk4': the smoke preset's runs are rk4_refined, euler_fixed"),
    ('trained_runs(settings, runs=[])', lambda: RS.trained_runs(SMOKE, runs=[]), ValueError, "runs names no run"),
    ('trained_runs("smoke")', lambda: RS.trained_runs("smoke"), TypeError, "settings must be the session's Settings"),
    ('manifestation.run(runs, batch_size=0)', lambda: ST.run({"rk4_refined": _RUN}, batch_size=0), ValueError,
     "batch_size must be an integer >= 1, got 0"),
    ('robustness.run(runs, dict(sigmas=(0.1,), seeds=()))',
     lambda: robustness.run({"rk4_refined": _RUN}, dict(sigmas=(0.1,), seeds=())), ValueError,
     "seeds is empty, but weight noise is drawn at random for every level of sigmas"),
    ('robustness.run(runs, dict(bits=(1,)))', lambda: robustness.run({"rk4_refined": _RUN}, dict(bits=(1,))),
     ValueError, "bits[0] must be an integer >= 2, got 1"),
    ('manifestation.run({})', lambda: ST.run({}), ValueError, "runs must be the trained runs"),
    ('manifestation.run(runs, dict(n_step=(1,)))', lambda: ST.run({"rk4_refined": _RUN}, dict(n_step=(1,))), ValueError,
     "unknown sweep grid key 'n_step': a sweep grid has schemes, n_steps, compress, compress_schemes"),
    ('manifestation.live_app(runs, fig, n_images=0)', lambda: M.live_app({"rk4_refined": _RUN}, None, n_images=0),
     ValueError, "n_images must be an integer >= 1, got 0"),
    ('manifestation.live_app(runs, fig, n_show=50, n_images=20)',
     lambda: M.live_app({"rk4_refined": _RUN}, None, n_images=20, n_show=50), ValueError,
     "n_show must be an integer >= 1 and <= 20, got 50"),
    ('robustness.live_app(runs, fig, grid, n_images=-1)',
     lambda: robustness.live_app({"rk4_refined": _RUN}, None, {}, n_images=-1), ValueError,
     "n_images must be an integer >= 1, got -1"),
]


@pytest.mark.parametrize("shown, call, exc, fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_message_that_names_it(shown, call, exc, fragment):
    with pytest.raises(exc) as err:
        call()
    assert fragment in str(err.value), f"{shown}: {err.value}"


@pytest.fixture(scope="module")
def m4_checkpoint(tmp_path_factory):
    """A tiny trained run with M = 4, for the command lines' cases."""
    root = tmp_path_factory.mktemp("cli")
    write_fake_cifar(root / "data", n_train=64, n_test=16)
    T.train(T.TrainConfig(data_dir=str(root / "data"), channels=(2, 4), n_basis=4, scheme="euler", batch_size=32,
                          epochs=1, device="cpu", progress=False, out_dir=str(root / "run")))
    return str(root / "run" / TS.CHECKPOINT)


# the command lines (issue 18): one line "error: ...", exit status 1, never a traceback
CLI_CASES = [
    ("python -m cnet_lib train --scheme rk4", lambda ck: train_cli.main(["--scheme", "rk4"]),
     "error: the scheme name 'rk4' is ambiguous"),
    ("python -m cnet_lib train --lr -0.1", lambda ck: train_cli.main(["--lr", "-0.1"]),
     "error: lr must be a finite number > 0, got -0.1 (e.g. lr=0.1)"),
    ("python -m cnet_lib train --batch-size 0", lambda ck: train_cli.main(["--batch-size", "0"]),
     "error: batch_size must be an integer >= 1, got 0 (e.g. batch_size=128)"),
    ("python -m cnet_lib train --epochs -1", lambda ck: train_cli.main(["--epochs", "-1"]),
     "error: epochs must be an integer >= 0, got -1"),
    ("python -m cnet_lib sweep CHECKPOINT --batch-size 0", lambda ck: sweep_cli.main([ck, "--batch-size", "0"]),
     "error: batch_size must be an integer >= 1, got 0 (e.g. batch_size=500)"),
    ("python -m cnet_lib sweep CHECKPOINT --n-test 0", lambda ck: sweep_cli.main([ck, "--n-test", "0"]),
     "error: n_test must be an integer >= 1, got 0"),
    ("python -m cnet_lib sweep CHECKPOINT --compress 4", lambda ck: sweep_cli.main([ck, "--compress", "4", "--quiet"]),
     "error: compress holds M = 4, but the model has M = 4 basis functions"),
    ("python -m cnet_lib robustness CHECKPOINT --batch-size 0",
     lambda ck: robustness_cli.main([ck, "--batch-size", "0"]), "error: --batch-size must be an integer >= 1, got 0"),
    ("python -m cnet_lib robustness CHECKPOINT --n-test 0", lambda ck: robustness_cli.main([ck, "--n-test", "0"]),
     "error: --n-test must be an integer >= 1, got 0"),
    ("python -m cnet_lib robustness CHECKPOINT --bits 1", lambda ck: robustness_cli.main([ck, "--bits", "1", "--quiet"]),
     "error: bits[0] must be an integer >= 2, got 1"),
]


@pytest.mark.parametrize("shown, call, fragment", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_command_line_input_gets_one_line(shown, call, fragment, m4_checkpoint, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the train cases would write runs/train here, had they started
    capsys.readouterr()
    assert call(m4_checkpoint) == 1, shown
    err = capsys.readouterr().err.strip()
    assert err.startswith(fragment) and len(err.splitlines()) == 1 and "Traceback" not in err, f"{shown}: {err}"
    assert not (tmp_path / "runs").exists(), "nothing may be written before the input is checked"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_asked_for_on_a_cpu_machine_fails_before_loading_data(monkeypatch):
    def no_data(*a, **k):
        raise AssertionError("the data was loaded before the device was checked")

    monkeypatch.setattr(TL, "load_dataset", no_data)
    with pytest.raises(RuntimeError, match="asks for CUDA, but CUDA is not available here"):
        T.train(T.TrainConfig(device="cuda"))


def test_a_config_typo_fails_before_the_data_is_loaded(monkeypatch):
    def no_data(*a, **k):
        raise AssertionError("the data was loaded before the config was checked")

    monkeypatch.setattr(TL, "load_dataset", no_data)
    with pytest.raises(ValueError, match="unknown scheme"):
        T.train(T.TrainConfig(scheme="rk_4", device="cpu"))


def test_command_line_without_run_says_which_runs_exist(capsys):
    with pytest.raises(SystemExit) as exit_:  # a wrong combination of options: usage and the message, status 2
        train_cli.main(["--preset", "cpu"])
    assert exit_.value.code == 2
    assert re.search(r"--preset cpu needs --run, one of: rk4_refined, euler_fixed", capsys.readouterr().err)
