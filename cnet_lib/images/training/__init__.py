"""The image study's second wing, training: what a run is (:mod:`.train_config`), the loop
(:mod:`.train_loop`), checkpoints and resume (:mod:`.train_state`), and evaluation (:mod:`.evaluation`).
Imports the data wing only."""
from . import evaluation, train_config, train_loop, train_state

__all__ = ["train_config", "train_loop", "train_state", "evaluation"]
