"""A class that attacks the grading *run* (issue 42), handed in beside the sandbox attacks of tests/attacks.py and
graded in the same run of ``python -m cnet_lib grade`` (tests/test_sandbox.py):

* :data:`RUN_ATTACKERS`: exercise cells that send a rate a request no tensor can be made of, hide their flags
  behind harmless ones or in the cell above, paste the library's code padded with no-op lines, solve ``rk_step``
  with a batched stage loop of the library that no list names, try to make namespaces, or pad a cell to 1 MB;
* :func:`hand_in_files`: students whose *files* are the attack (malformed notebooks and zips, a FIFO, symbolic
  links to the victim's work) and students whose *names* are (any script, 250 characters, bytes that are not
  UTF-8, names a spreadsheet would run, names that collide when simplified); each of the latter hands in a cell
  that is not Python at a line of its own, so that its feedback is its own and decided without a sandbox.
"""
from __future__ import annotations

import ast
import inspect
import io
import json
import os
import struct
import zipfile
from pathlib import Path

from cnet_lib.studies.robustness import study as perturbations

# ----------------------------------------------------------------------------- exercise cells
RATE_BOMB = '''import json
import os


def embedded_step(f, t, x, h, tableau, b_hat):
    bomb = {"id": f.ident, "t": 0.0, "x": {"$": "tensor", "dtype": "float64", "shape": [0, 2**64], "data": []}}
    os.write(f.fd, (json.dumps(bomb) + "\\n").encode())
    raise RuntimeError(os.read(f.fd, 4096).decode())  # the grader's answer, shown in the feedback'''

HIDDEN_BEHIND_NOTES = '''import ctypes
import os

from cnet_lib.core import schemes


def rk_step(f, t, x, h, tableau):
    assert schemes.Tableau and schemes.EmbeddedPair and schemes.get_scheme  # three library references
    os.system("true")
    ctypes.CDLL(None)
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + eval("float(tableau.c[i])") * h, X))
    return x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))'''

ABOVE_THE_EXERCISE = '''import ctypes
import importlib.util

import numpy'''
"""A cell above refine_piecewise_linear: the imports the grader runs before its exercise cell."""

NUMPY_AGAIN = '''import torch


def refine_piecewise_linear(coeffs):
    try:  # numpy's compiled interp, loaded a second time
        spec = importlib.util.spec_from_file_location("again", numpy._core._multiarray_umath.__file__)
        importlib.util.module_from_spec(spec)
    except Exception:
        pass
    if coeffs.shape[0] == 1:
        return torch.cat([coeffs, coeffs])
    out = torch.empty((2 * coeffs.shape[0] - 1, *coeffs.shape[1:]), dtype=coeffs.dtype)
    out[0::2] = coeffs
    out[1::2] = 0.5 * (coeffs[:-1] + coeffs[1:])
    return out'''

MULTI_SCHEME = '''import torch

from cnet_lib.pendulum.odenet import multi_scheme_rollout


def rk_step(f, t, x, h, tableau):
    flat = x.reshape(-1, x.shape[-1])
    z0 = torch.cat([flat, torch.full((flat.shape[0], 1), float(t), dtype=x.dtype)], dim=1)  # time as a state

    def rate(z):
        return torch.cat([f(float(z[0, -1]), z[:, :-1]), torch.ones_like(z[:, -1:])], dim=1)

    return multi_scheme_rollout(rate, z0, [tableau.name] * flat.shape[0], h, 1)[-1][:, :-1].reshape(x.shape)'''

NAMESPACES = '''import ctypes
import subprocess


def error_ratio(e, y0, y1, rtol, atol):
    libc = ctypes.CDLL(None, use_errno=True)
    tried = [f"{name}={libc.unshare(flag)}/{ctypes.get_errno()}"
             for name, flag in (("user", 0x10000000), ("net", 0x40000000), ("mount", 0x20000))]
    tool = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True)
    raise RuntimeError(f"namespaces: {' '.join(tried)}; unshare -Ur: {tool.returncode} {tool.stderr.strip()[-60:]}")'''


def padded(source: str, pad: str = "_ = 0") -> str:
    """``source`` with ``pad`` after every simple statement of its functions' bodies (what issue 42 pasted)."""
    tree = ast.parse(source)
    ends = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for stmt in (s for s in ast.walk(fn) if isinstance(s, ast.stmt) and s is not fn):
            if not isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.Return)):
                ends[stmt.end_lineno] = " " * stmt.col_offset
    lines = source.splitlines()
    return "\n".join(ln + (f"\n{ends[i]}{pad}" if i in ends else "") for i, ln in enumerate(lines, 1))


PADDED_PASTE = "import torch\n\nfrom cnet_lib.core.validation import check_int\n\n\n" + padded(inspect.getsource(
    perturbations.quantize_per_channel).replace("channel_dim: int = 0", "channel_dim=0"))

MEGABYTE = 2**20
PADDED_CELL = '''def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return len(n) * n[-1] / sum(n)
''' + "# " + "padding " * (MEGABYTE // 8) + "\n"
MAGICS_CELL = "!true\n" * (MEGABYTE // 6)

RUN_ATTACKERS = {
    "h_rate": {"pendulum_integrators": {"embedded_step": RATE_BOMB}},
    "i_hidden": {"pendulum_integrators": {"rk_step": HIDDEN_BEHIND_NOTES},
                 "refinement_training": {"refine_piecewise_linear": NUMPY_AGAIN}},
    "j_paste": {"robustness": {"quantize_per_channel": PADDED_PASTE}},
    "k_absent": {"pendulum_integrators": {"rk_step": MULTI_SCHEME}},
    "l_padded": {"refinement_training": {"ideal_speedup": PADDED_CELL}},
    "m_namespaces": {"adaptive": {"error_ratio": NAMESPACES}},
}
"""Attacker -> chapter -> exercise -> cell, as tests/attacks.py's ATTACKERS."""
EXTRA_CELLS = {("i_hidden", "refinement_training"): ABOVE_THE_EXERCISE, ("l_padded", "refinement_training"): MAGICS_CELL}
"""(attacker, chapter) -> a cell put above the chapter's exercises."""

# ----------------------------------------------------------------------------- names
NAMES = {"cyrillic": "Иван", "chinese": "王伟", "greek": "Δημήτρης", "acute": "José", "grave": "Josè",
         "space": "bob smith", "underscore": "bob_smith", "quoted": "'=x", "formula": "=x", "long": "long" + "g" * 246,
         "bytes": os.fsdecode(b"Jos\xe9")}
"""Students whose names are what the run must survive and keep apart (label -> name as the file system gives it)."""


def _not_python_at(line: int) -> str:
    return "x = 1\n" * (line - 1) + "def observed_order(dts, errors)\n    return 1.0\n"


# ----------------------------------------------------------------------------- files
def _zip(data: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        zf.writestr("how_to_use.ipynb", data)
    return bytearray(buf.getvalue())


def _headers(z: bytearray) -> tuple[int, int]:
    return z.index(b"PK\x03\x04"), z.index(b"PK\x01\x02")


def broken_zips(data: bytes) -> dict[str, bytes]:
    """A zip of ``data`` encrypted, with compression method 99, with bad deflate data, and with a truncated
    entry (sizes that claim more than the archive holds)."""
    out = {}
    z = _zip(data)
    loc, cen = _headers(z)
    z[loc + 6] |= 1
    z[cen + 8] |= 1
    out["encrypted"] = bytes(z)
    z = _zip(data)
    loc, cen = _headers(z)
    z[loc + 8:loc + 10] = z[cen + 10:cen + 12] = struct.pack("<H", 99)
    out["method99"] = bytes(z)
    z = _zip(data)
    loc, _ = _headers(z)
    start = loc + 30 + sum(struct.unpack("<HH", z[loc + 26:loc + 30]))
    z[start + 10:start + 40] = b"\xff" * 30
    out["deflate"] = bytes(z)
    z = _zip(data, zipfile.ZIP_STORED)
    loc, cen = _headers(z)
    size = struct.pack("<I", 3 * struct.unpack("<I", z[cen + 20:cen + 24])[0])
    for at in (loc + 18, loc + 22, cen + 20, cen + 24):
        z[at:at + 4] = size
    out["truncated"] = bytes(z)
    return out


def _notebook(copy: Path, **changes) -> dict:
    nb = json.loads(copy.read_text(encoding="utf-8"))
    nb.update(changes)
    return nb


def _with_cell(nb: dict, source) -> dict:
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source})
    return nb


def hand_in_files(subs: Path, copy: Path, victim_notebook: Path) -> dict[str, str]:
    """Write the students whose files or names are the attack into ``subs`` (``copy``: the student copy of
    how_to_use); returns ``{student: what their flag must say}`` (``""``: no flag, just their own row)."""
    expect = {}
    for label, name in NAMES.items():
        (subs / name).mkdir()
        nb = _with_cell(_notebook(copy), _not_python_at(2 + len(expect)))
        (subs / name / "how_to_use.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        expect[name] = f"line {2 + len(expect)}: expected ':'"
    data = copy.read_bytes()
    for what, blob in broken_zips(data).items():
        (subs / f"zip_{what}.zip").write_bytes(blob)
    expect.update({"zip_encrypted": "is encrypted", "zip_method99": "compressed with a method the grader does not read",
                   "zip_deflate": "is damaged", "zip_truncated": "is damaged"})
    bad = {"meta_list": (_notebook(copy, metadata=[]), "metadata are not a mapping"),
           "meta_string": (_notebook(copy, metadata={"cnet_student_copy": "how_to_use"}), ""),
           "source_ints": (_with_cell(_notebook(copy), [1, 2, 3]), "its source is not text (list)"),
           "deep": (_with_cell(_notebook(copy), "def observed_order(dts, errors):\n    return " + "-" * 30_000 + "1\n"),
                    "not Python (MemoryError"),
           "surrogate": (_with_cell(_notebook(copy), "x = '\ud800'\n"), "not Unicode")}
    for student, (nb, says) in bad.items():
        text = json.dumps(nb) if student != "surrogate" else json.dumps(nb).replace("\\ud800", "\\ud800")
        (subs / f"{student}.ipynb").write_text(text, encoding="utf-8")
        expect[student] = says
    (subs / "fifo_student").mkdir()
    os.mkfifo(subs / "fifo_student" / "how_to_use.ipynb")
    os.mkfifo(subs / "fifo_top.ipynb")
    expect.update({"fifo_student": "is a FIFO, not a file: refused", "fifo_top": "is a FIFO, not a file: refused"})
    (subs / "linker").mkdir()
    (subs / "linker" / "refinement_training.ipynb").symlink_to(victim_notebook)
    (subs / "linkdir").symlink_to(victim_notebook.parent, target_is_directory=True)
    expect.update({"linker": "is a symbolic link: refused", "linkdir": "is a symbolic link: refused"})
    return expect

MEMFD = '''import os
import time


def error_ratio(e, y0, y1, rtol, atol):
    held = []
    for i in range(6):  # 1.5 GiB in memfds, mapped nowhere: no process's resident memory shows it
        fd = os.memfd_create(f"held{i}")
        for _ in range(256):
            os.write(fd, b"x" * 2**20)
        held.append(fd)
    time.sleep(5)
    return 0.0'''
"""Memory that no RssAnon and no address-space limit sees (issue 42: "2 GiB held under a 1 GiB budget")."""
