"""The CPU thread policy (cnet_lib.runtime.threads): threads from the work size, CNET_THREADS overrides."""
from __future__ import annotations

import pytest
import torch

from cnet_lib.runtime.threads import THREADS_ENV, image_step_flops, threads_for, torch_threads


def test_smoke_steps_get_one_thread_and_cpu_preset_steps_two(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    smoke = image_step_flops((4, 8, 8), 32, 4, [2, 2, 2])  # RK4-classic N_t = 2, the smoke preset
    cpu_euler = image_step_flops((8, 16, 32), 128, 1, [4, 4, 4])  # the cpu preset's smallest step
    assert threads_for(smoke, cores=2) == 1 and threads_for(cpu_euler, cores=2) == 2
    assert threads_for(cpu_euler, cores=1) == 1 and threads_for(0.0, cores=8) == 1
    assert image_step_flops((8, 16, 32), 128, 4, [4, 4, 4]) == pytest.approx(4 * cpu_euler)


def test_environment_overrides_and_bad_values_say_how(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert threads_for(1.0) == 3
    monkeypatch.setenv(THREADS_ENV, "zero")
    with pytest.raises(ValueError, match="CNET_THREADS='zero' must be a positive integer"):
        threads_for(1.0)


def test_torch_threads_restores_the_count():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_training_records_the_threads_of_each_epoch(tmp_path, monkeypatch):
    from cnet_lib.images import training as T
    from cnet_lib.images.data import write_fake_cifar

    monkeypatch.delenv(THREADS_ENV, raising=False)
    write_fake_cifar(tmp_path, n_train=64, n_test=32)
    res = T.train(T.TrainConfig(data_dir=str(tmp_path), channels=(2, 4, 4), batch_size=32, epochs=1, scheme="euler",
                                device="cpu", progress=False))
    assert res.history[0]["torch_threads"] == 1, "a tiny step runs on one thread"
