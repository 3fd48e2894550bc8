"""The library a researcher installs (issue 52, item 1): ``pip install cnet-lib`` needs torch, numpy and two small
pure-Python helpers; the book's stack is the extra ``cnet-lib[book]``; ``import cnet_lib`` imports no plotly,
ipywidgets, scipy or nbformat and every public name works; ``py.typed`` ships.

The slow test installs the wheel of this tree *without extras* into a fresh virtual environment (torch 2.13.0 from
the pinned wheel pip finds on this machine, as ``scripts/setup.sh`` and ``tests/test_colab_rehearsal.py`` install it)
and runs the README's example there, on a small fake CIFAR-10 in the environment's own data folder.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import cnet_lib
import pytest

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.book.student_copies import build_wheel, project_version
from cnet_lib.runtime.settings import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
CORE = {"torch", "numpy", "tqdm", "filelock"}
BOOK_ONLY = ("plotly", "ipywidgets", "scipy", "nbformat", "IPython", "torchdiffeq", "yaml")


def _pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _requirements(block: str) -> set[str]:
    return {re.split(r"[<>=\[ ]", item.strip().strip('"'))[0].lower() for item in re.findall(r'"[^"]+"', block)}


def test_the_core_install_needs_torch_numpy_and_two_small_helpers():
    text = _pyproject()
    core = re.search(r"(?ms)^dependencies = \[(.*?)^\]", text).group(1)
    assert _requirements(core) == CORE
    book = re.search(r"(?ms)^book = \[(.*?)^\]", text).group(1)
    assert _requirements(book) == {n.lower() for n in EXTRAS["book"]}, "pyproject's book extra and EXTRAS agree"
    assert re.search(r'(?m)^teacher = \["cnet-lib\[book\]"', text)
    assert '"py.typed"' in text and (ROOT / "cnet_lib" / "py.typed").is_file()


def test_importing_cnet_lib_imports_none_of_the_books_stack_and_every_name_works():
    code = textwrap.dedent(f"""
        import sys, cnet_lib
        loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({BOOK_ONLY!r}))
        missing = [n for n in cnet_lib.__all__ if getattr(cnet_lib, n, None) is None]
        loaded_after = sorted({{m.split('.')[0] for m in sys.modules}} & set({BOOK_ONLY!r}))
        print(loaded, missing, loaded_after)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "[]", "[]"], out.stdout
    assert set(dir(cnet_lib)) >= set(cnet_lib.__all__)


def _run(cmd, **kw) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"(?s)## One example.*?```python\n(.*?)```", text).group(1)


CORE_CHECKS = textwrap.dedent("""
    import warnings
    import torch
    import cnet_lib
    from cnet_lib import ContinuousNet, StaleOptimizerWarning, integrate
    assert all(getattr(cnet_lib, name) is not None for name in cnet_lib.__all__)
    states = integrate(lambda t, x: torch.sin(t) * x, torch.ones(2), "rk4_classic", 8, t_eval=[0.5, 1.0])
    assert states.shape == (2, 2)
    model = ContinuousNet(channels=(4, 8, 8), n_basis=2, scheme="rk4_38").eval()
    model.manifest(n_steps=[3, 4, 5])
    rebuilt = ContinuousNet(**model.config()).eval()
    rebuilt.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 8, 8)
    assert torch.equal(rebuilt(x), model(x))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.project(1)
    model(x).sum().backward()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        optimizer.step()
    assert any(issubclass(w.category, StaleOptimizerWarning) for w in seen)
    print("core checks ok")
""")


@pytest.mark.slow  # a fresh virtual environment with torch (about a minute), then the README's training
def test_the_core_install_alone_runs_the_readme_example(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    wheel = build_wheel(ROOT, project_version(ROOT), tmp_path / "dist")
    torch_pin = next(ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln.startswith("torch=="))
    # --no-compile: byte-compiling torch up front takes a minute on 2 cores; the example compiles what it imports
    _run([python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", torch_pin, wheel],
         timeout=1200)
    installed = {d["name"].lower() for d in json.loads(_run([python, "-m", "pip", "list", "--format=json"]))}
    assert not installed & {"plotly", "ipywidgets", "scipy", "nbformat", "torchdiffeq", "ipython"}, installed
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    assert (site / "cnet_lib" / "py.typed").is_file()

    home = tmp_path / "home"
    write_fake_cifar(home / ".cache" / "cnet_lib" / "data", n_train=400, n_test=200)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CNET_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), OMP_NUM_THREADS="1")  # one thread: the machine is shared
    work = tmp_path / "work"
    work.mkdir()
    (work / "example.py").write_text(_readme_example(), encoding="utf-8")
    out = _run([python, "example.py"], cwd=work, env=env, timeout=900)
    accuracy = float(re.search(r"accuracy with Euler, N_t = 4: ([0-9.]+)", out).group(1))
    assert accuracy > 0.3, out  # the fake classes differ by their colour: learnt in two epochs
    assert (work / "model.pt").is_file()

    # every public name, and the checks of issue 52 that need no extra
    out = _run([python, "-c", CORE_CHECKS], cwd=work, env=env, timeout=600)
    assert out.strip().endswith("core checks ok"), out

    # the book's parts say which install they need
    probe = "import cnet_lib.book"
    err = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=work, env=env)
    assert err.returncode != 0 and 'pip install "cnet-lib[book]"' in err.stderr, err.stderr[-1500:]
