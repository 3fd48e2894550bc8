"""Code of mistakes students make, as the exercise cells they hand in: every near miss the exercises name (the answer
key's own code, :data:`cnet_lib.teacher.near_miss_key.CODES`) and mistakes they do not name (:data:`OTHER_MISTAKES`,
the ones of issue 54's trial).  tests/test_grading.py grades each against the hidden cases (at most a third of the
points, and a hint aimed at the near miss it makes or none); tests/classroom.py hands them to the class.
"""
from __future__ import annotations

from cnet_lib.teacher.near_miss_key import CODES, EMBEDDED_FLIPPED, GLOBAL_ERROR

__all__ = ["CODES", "EMBEDDED_FLIPPED", "OTHER_MISTAKES"]

OTHER_MISTAKES = {
    "global_error": {"second_to_last": GLOBAL_ERROR.format(count="round(t_final / dt)").replace("path[-1]", "path[-2]")},
    "observed_order": {"sign": '''import numpy as np


def observed_order(dts, errors):
    return -np.polyfit(np.log(dts), np.log(errors), 1)[0]  # the sign flipped'''},
    "ideal_speedup": {"floor_division": '''def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return len(n) * n[-1] // sum(n)  # an integer division'''},
}
"""Exercise -> label -> the code of a mistake the exercise does not name (issue 54's trial: the last point but one,
a flipped sign, an integer division); the grader's hint for them is the exercise's own first one."""
