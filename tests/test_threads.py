"""The CPU thread policy (cnet_lib.runtime.device): threads from the work size, the session's ``threads``
setting (``CNET_THREADS``) overrides."""
from __future__ import annotations

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.runtime.device import image_step_flops, threads_for, torch_threads
from cnet_lib import images as T


def test_smoke_steps_get_one_thread_and_cpu_preset_steps_two():
    smoke = image_step_flops((4, 8, 8), 32, 4, [2, 2, 2])  # RK4-classic N_t = 2, the smoke preset
    cpu_euler = image_step_flops((8, 16, 32), 128, 1, [4, 4, 4])  # the cpu preset's smallest step
    assert threads_for(smoke, cores=2) == 1 and threads_for(cpu_euler, cores=2) == 2
    assert threads_for(cpu_euler, cores=1) == 1 and threads_for(0.0, cores=8) == 1
    assert image_step_flops((8, 16, 32), 128, 4, [4, 4, 4]) == pytest.approx(4 * cpu_euler)


def test_the_setting_overrides_and_bad_values_say_how():
    assert threads_for(1.0, override=3) == 3 and threads_for(1e12, cores=2, override=1) == 1
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        threads_for(1.0, override=0)


def test_torch_threads_restores_the_count():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("threads, expected", [(None, 1), (2, 2)])
def test_training_records_the_threads_of_each_epoch(tmp_path, threads, expected):
    write_fake_cifar(tmp_path, n_train=64, n_test=32)
    res = T.train(T.TrainConfig(data_dir=str(tmp_path), channels=(2, 4, 4), batch_size=32, epochs=1, scheme="euler",
                                device="cpu", progress=False, threads=threads))
    assert res.history[0]["torch_threads"] == expected, "a tiny step runs on one thread unless the setting says otherwise"
