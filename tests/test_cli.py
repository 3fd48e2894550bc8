"""``python -m cnet_lib <command>``: every command line in ``cnet_lib/cli/``, one convention, one entry point;
and the packages' re-exports that let a chapter write short names."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import cnet_lib
import cnet_lib.__main__ as entry
from cnet_lib import draw, images, pendulum
from cnet_lib.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "cnet_lib" / "cli"


def test_every_command_module_is_listed_and_follows_the_convention():
    modules = sorted(p.stem for p in CLI.glob("*.py") if p.stem != "__init__")
    assert sorted(COMMANDS) == modules, "a module in cnet_lib/cli/ is a command: list it in cnet_lib.cli.COMMANDS"
    for name, module in COMMANDS.items():
        assert isinstance(module.SUMMARY, str) and "\n" not in module.SUMMARY and not module.SUMMARY.endswith(".")
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
        assert [a.arg for a in main.args.args] == ["argv"] and ast.unparse(main.returns) == "int", name
        assert "argparse" in {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}, name
        assert not any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body), \
            f"{name}: commands run through python -m cnet_lib, not on their own"


def test_no_arguments_list_the_commands(capsys):
    assert entry.main([]) == 0 and entry.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, module in COMMANDS.items():
        assert f"  {name}" in out and module.SUMMARY in out


def test_an_unknown_command_says_which_exist(capsys):
    assert entry.main(["trian"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown command 'trian'; the commands are train, sweep")


def test_python_dash_m_runs_a_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "cnet_lib", "train", "--list"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "smoke  rk4_refined" in out.stdout and "cpu    euler_fixed" in out.stdout


@pytest.mark.parametrize("package", [pendulum, images, draw], ids=lambda p: p.__name__)
def test_packages_reexport_their_modules_names_once(package):
    names = [n for module in package.MODULES for n in module.__all__]
    assert len(names) == len(set(names)), "two modules export one name: " + ", ".join(
        sorted({n for n in names if names.count(n) > 1}))
    assert package.__all__ == names
    for module in package.MODULES:
        assert getattr(package, module.__name__.rsplit(".", 1)[1]) is module, "a name hides its module"
        for name in module.__all__:
            assert getattr(package, name) is getattr(module, name), f"{package.__name__}.{name}"


def test_the_chapters_short_names_exist():
    assert callable(images.trained_runs) and callable(images.sample_batch) and callable(pendulum.config_for)
    assert callable(draw.fig_accuracy_vs_nt) and callable(draw.live_rollout_app) and callable(cnet_lib.select_preset)
