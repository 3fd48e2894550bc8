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
    """Every module of cnet_lib/cli/ but the shared one is a command with SUMMARY, add_arguments, run, what Ctrl-C
    leaves behind, and main(argv) -> int that runs it alone; none runs on its own (``if __name__ ...``).  All the
    problems are listed at once."""
    modules = sorted(p.stem for p in CLI.glob("*.py") if p.stem not in ("__init__", "command_line"))
    assert sorted(COMMANDS) == modules, "a module in cnet_lib/cli/ is a command: list it in cnet_lib.cli.COMMANDS"
    problems = []
    for name, module in COMMANDS.items():
        if not (isinstance(module.SUMMARY, str) and "\n" not in module.SUMMARY and not module.SUMMARY.endswith(".")):
            problems.append(f"{name}: SUMMARY is one line without a final full stop")
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
        if not ([a.arg for a in main.args.args] == ["argv"] and ast.unparse(main.returns) == "int"):
            problems.append(f"{name}: main(argv) -> int")
        if "argparse" not in {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}:
            problems.append(f"{name}: its options are argparse's")
        if any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            problems.append(f"{name}: commands run through cnet or python -m cnet_lib, not on their own")
        if name in PENDING:
            continue
        if not (callable(getattr(module, "add_arguments", None)) and callable(getattr(module, "run", None))):
            problems.append(f"{name}: add_arguments(parser) and run(args) -> int")
        if not (isinstance(getattr(module, "INTERRUPTED", None), str) or callable(getattr(module, "interrupted", None))):
            problems.append(f"{name}: INTERRUPTED (or interrupted(args)): what Ctrl-C leaves behind")
        if "command_main(sys.modules[__name__], argv)" not in ast.unparse(main):
            problems.append(f"{name}: main runs the command through command_main (one handler for every command)")
    assert not problems, "\n".join(problems)


PENDING = ("grade",)
"""Commands that still parse and handle their own options: ``grade``, rewritten with the grader's isolation
(issue 29), takes the convention when that lands."""


def test_one_handler_says_faults_usage_and_ctrl_c_the_same_way_for_every_command(capsys, monkeypatch):
    from cnet_lib.cli import command_line, sweep

    def fault(args):
        raise OSError("the disk is full")

    def interrupted(args):
        raise KeyboardInterrupt

    def usage(args):
        raise command_line.UsageError("--a needs --b")

    for run, status, said in ((fault, 1, "error: the disk is full"), (interrupted, 130, sweep.INTERRUPTED)):
        monkeypatch.setattr(sweep, "run", run)
        assert entry.main(["sweep", "x.pt"]) == status and sweep.main(["x.pt"]) == status
        err = capsys.readouterr().err
        assert err.count(said) == 2 and "Traceback" not in err, err
    monkeypatch.setattr(sweep, "run", usage)
    assert entry.main(["sweep", "x.pt"]) == 2
    with pytest.raises(SystemExit) as exit_:
        sweep.main(["x.pt"])
    assert exit_.value.code == 2 and capsys.readouterr().err.count("error: --a needs --b") == 2


def test_the_cnet_console_script_is_declared_and_runs():
    """``cnet`` is pyproject's console script for the same entry point as ``python -m cnet_lib``."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.scripts]\ncnet = "cnet_lib.__main__:main"' in text
    cnet = Path(sys.executable).parent / "cnet"
    if not cnet.exists():
        pytest.skip("this environment was installed before the console script was declared: run scripts/setup.sh")
    out = subprocess.run([str(cnet), "train", "--list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "smoke  rk4_refined" in out.stdout, out.stderr
    listed = subprocess.run([str(cnet)], capture_output=True, text=True, timeout=120).stdout
    assert listed.startswith("usage: cnet <command>"), listed


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


@pytest.mark.parametrize("package", [pendulum, draw], ids=lambda p: p.__name__)
def test_packages_reexport_their_modules_names_once(package):
    names = [n for module in package.MODULES for n in module.__all__]
    assert len(names) == len(set(names)), "two modules export one name: " + ", ".join(
        sorted({n for n in names if names.count(n) > 1}))
    assert package.__all__ == names
    for module in package.MODULES:
        assert getattr(package, module.__name__.rsplit(".", 1)[1]) is module, "a name hides its module"
        for name in module.__all__:
            assert getattr(package, name) is getattr(module, name), f"{package.__name__}.{name}"


def test_the_image_study_reexports_its_chapters_names_from_their_modules():
    """``cnet_lib.images`` names its wings and, explicitly, the names the chapters call: each is the public name of
    one module of a wing (the same object), and every name of a chapter's ``images.<name>`` is among them."""
    wings = {w: getattr(images, w) for w in ("data", "training", "runs")}
    homes = {}
    for wing in wings.values():
        for mod_name in wing.__all__:
            module = getattr(wing, mod_name)
            for name in module.__all__:
                homes.setdefault(name, []).append(module)
    for name in images.__all__:
        if name in wings:
            continue
        assert len(homes.get(name, [])) == 1, f"images.{name} is the public name of {homes.get(name)}"
        assert getattr(images, name) is getattr(homes[name][0], name), f"images.{name}"
    assert len(images.__all__) == len(set(images.__all__))


def test_the_chapters_short_names_exist():
    assert callable(images.trained_runs) and callable(images.sample_batch) and callable(pendulum.config_for)
    assert callable(draw.slider_figure) and callable(draw.live_app) and callable(cnet_lib.select_preset)
