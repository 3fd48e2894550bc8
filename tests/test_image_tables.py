"""The runs table (cnet_lib.book.runs_table) that the image chapters print:
each test builds a case whose numbers are known and checks the printed cells, so that a table
printing a wrong number, a wrong column or a wrong row fails.  Tiny models, no data: seconds."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from cnet_lib.book import paper_claims as RR
from cnet_lib.images.training import train_state as TS
from text_tables import row_of, tiny


def history(rows):
    """History rows as train() writes them, from (epoch, N_t = M, refined, seconds, loss, acc)."""
    return [{"epoch": e, "n_steps": [n] * 3, "n_basis": [n] * 3, "n_parameters": 100 * n, "lr": 0.1, "refined": r,
             "train_seconds": s, "train_loss": loss, "test_acc": acc} for e, n, r, s, loss, acc in rows]


def study_run(tmp_path: Path, name: str, label: str, hist, env=None, model=None, config=None):
    out = tmp_path / name
    out.mkdir()
    if env is not None:
        (out / TS.RESULTS).write_text(json.dumps({"environment": env, "epochs_done": len(hist), "history": hist}))
    return SimpleNamespace(name=name, label=label, history=hist, out_dir=out, model=model, config=config,
                           final_accuracy=hist[-1]["test_acc"])


# ----------------------------------------------------------------------------- the runs table
def test_format_runs_reads_the_trained_models(tmp_path):
    rk4, euler = tiny("rk4_classic", n_basis=[2, 2, 4]), tiny("euler", n_basis=2)
    runs = {
        "rk4_refined": study_run(tmp_path, "a", "RK4 run", history([(1, 1, False, 1.0, 2.0, 0.25), (2, 2, True, 2.0, 1.5, 0.3456)]),
                                 model=rk4, config=SimpleNamespace(channels=(2, 4, 4), n_train=None)),
        "euler_fixed": study_run(tmp_path, "b", "Euler run", history([(1, 2, False, 1.0, 2.0, 0.5)]),
                                 model=euler, config=SimpleNamespace(channels=(2, 4, 4), n_train=300)),
    }
    text = RR.runs_table(runs)
    assert row_of(text, "M (pieces per block)")[1:] == ["[2, 2, 4]", "2"], "a per-block M is shown as a list"
    assert row_of(text, "parameters")[1:] == [str(rk4.n_parameters()), str(euler.n_parameters())]
    assert row_of(text, "held-out accuracy")[1:] == ["0.346", "0.500"]
    assert row_of(text, "training images")[1:] == ["all", "300"]
    assert row_of(text, "epochs")[1:] == ["2", "1"]
    assert row_of(text, "scheme")[1:] == ["rk4_classic", "euler"]


