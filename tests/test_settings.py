"""The session's settings (cnet_lib.runtime.settings): read from the environment in one place, checked once,
and passed down; no other module of the package reads the environment."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from cnet_lib.runtime.settings import ENVIRONMENT, Settings, check_mirror

PACKAGE = Path(__file__).resolve().parents[1] / "cnet_lib"
READER = PACKAGE / "runtime" / "settings.py"
ENV_FUNCTIONS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(source: str) -> list[str]:
    """Where ``source`` touches the process environment: ``os.environ``/``os.getenv``/... or an
    ``from os import environ``-style import (line numbers)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ENV_FUNCTIONS:
            out.append((node.lineno, f"line {node.lineno}: .{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & ENV_FUNCTIONS:
            out.append((node.lineno, f"line {node.lineno}: from os import {', '.join(a.name for a in node.names)}"))
    return [text for _, text in sorted(out)]


def test_only_the_settings_module_reads_the_environment():
    readers = {str(p.relative_to(PACKAGE)): environment_reads(p.read_text(encoding="utf-8"))
               for p in sorted(PACKAGE.rglob("*.py")) if p != READER}
    found = {k: v for k, v in readers.items() if v}
    assert not found, f"modules that read the environment (only Settings.from_environment may): {found}"
    assert environment_reads(READER.read_text(encoding="utf-8")), "the settings module reads it"


def test_the_scan_sees_every_way_in():
    src = "import os\nfrom os import getenv\na = os.environ['X']\nb = os.getenv('Y')\nos.environb\n"
    assert environment_reads(src) == ["line 2: from os import getenv", "line 3: .environ", "line 4: .getenv",
                                      "line 5: .environb"]
    assert environment_reads("import os\nos.path.join('a')\nenvironment = {}\n") == []


def test_defaults_read_nothing():
    s = Settings()
    assert s.preset == ("gpu" if torch.cuda.is_available() else "cpu")
    assert s.device == (torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available()
                        else torch.device("cpu"))
    assert s.data_dir == Path.home() / ".cache" / "cnet_lib" / "data"
    assert s.runs_dir == Path.home() / ".cache" / "cnet_lib" / "runs"
    assert s.threads is None and s.cuda_graphs is True
    assert (s.cifar10_url, s.cifar10_md5, s.cifar100_url, s.cifar100_md5) == (None, None, None, None)
    assert Settings.from_environment({}) == s, "an empty environment gives the defaults, whatever os.environ holds"


def test_every_variable_is_read(tmp_path):
    env = {"CNET_PRESET": " Smoke ", "CNET_DEVICE": "cpu:0", "CNET_DATA_DIR": str(tmp_path / "d"),
           "CNET_RUNS_DIR": str(tmp_path / "r"), "CNET_THREADS": "3", "CNET_CUDA_GRAPHS": "off",
           "CNET_CIFAR10_URL": "http://m/a.tgz", "CNET_CIFAR10_MD5": "A" * 32, "CNET_CIFAR100_URL": "http://m/b.tgz",
           "CNET_CIFAR100_MD5": "b" * 32, "UNRELATED": "x"}
    assert set(ENVIRONMENT.values()) == set(env) - {"UNRELATED"}, "every CNET_* variable of the library is here"
    s = Settings.from_environment(env)
    assert s == Settings(preset="smoke", device="cpu", data_dir=tmp_path / "d", runs_dir=tmp_path / "r", threads=3,
                         cuda_graphs=False, cifar10_url="http://m/a.tgz", cifar10_md5="a" * 32,
                         cifar100_url="http://m/b.tgz", cifar100_md5="b" * 32)
    assert s.device == torch.device("cpu") and s.download_source("cifar10") == {"url": "http://m/a.tgz", "md5": "a" * 32}
    assert Settings.from_environment({"CNET_CUDA_GRAPHS": "1"}).cuda_graphs
    assert Settings.from_environment({"CNET_PRESET": ""}) == Settings(), "an empty variable is unset"


def test_flags_override_the_environment():
    env = {"CNET_PRESET": "cpu", "CNET_THREADS": "2"}
    s = Settings.from_environment(env, preset="smoke", threads=None, runs_dir="/tmp/r")
    assert (s.preset, s.threads, s.runs_dir) == ("smoke", 2, Path("/tmp/r")), "a flag given as None keeps the value"
    assert s.replace(threads=1).threads == 1 and s.replace(threads=None) is s


@pytest.mark.parametrize("env, error, message", [
    ({"CNET_PRESET": "fast"}, ValueError, "unknown preset 'fast'; choose one of smoke, cpu, gpu, paper"),
    ({"CNET_THREADS": "zero"}, ValueError, "CNET_THREADS='zero' must be a positive integer"),
    ({"CNET_THREADS": "0"}, ValueError, "CNET_THREADS='0' must be a positive integer"),
    ({"CNET_DEVICE": "gpu0"}, RuntimeError, "CNET_DEVICE='gpu0': device 'gpu0' is not a torch device"),
    ({"CNET_CIFAR10_MD5": "0" * 32}, ValueError, "CNET_CIFAR10_MD5 .or md5=. only applies together with CNET_CIFAR10_URL"),
    ({"CNET_CIFAR10_URL": "http://h/x", "CNET_CIFAR10_MD5": "nope"}, ValueError, "CNET_CIFAR10_MD5 must be 32 hexadecimal"),
])
def test_a_bad_variable_is_named(env, error, message):
    with pytest.raises(error, match=message):
        Settings.from_environment(env)


def test_values_are_checked_without_the_environment_too():
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        Settings(threads=0)
    with pytest.raises(TypeError, match="cuda_graphs must be True or False"):
        Settings(cuda_graphs="no")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            Settings(device="cuda")
    assert check_mirror("cifar10", "http://h/a", None) == ("http://h/a", None)
    with pytest.raises(ValueError, match="published archive https://x"):
        check_mirror("cifar10", None, "f" * 32, published="https://x")
