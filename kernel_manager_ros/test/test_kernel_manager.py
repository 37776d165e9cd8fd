"""The kernel index (first active kernel, §3.2) and the manager's decisions."""
import numpy as np
import pytest

from kernel_fixtures import random_kernel_set
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.kernel import Kernel, KernelSet
from kernel_manager_ros.kernel_index import KernelIndex
from kernel_manager_ros.manager import KernelManager
from kernel_manager_ros.transfer import LinearTransfer, SensorTransfer

SLICES = {"pos": slice(0, 2)}


def two_kernels() -> KernelSet:
    """A motor kernel at (1, 1) (moves +0.5 in x) and a sensor kernel at (3, 3) (identity)."""
    shift = LinearTransfer((SensorTransfer("pos", 0, 2, np.eye(2), np.zeros((2, 1)),
                                           np.array([0.5, 0.0])),), 2, 1, 0.25)
    motor = Kernel(np.array([1.0, 1.0]), 0.1, 0.5, 0.5, shift, "motor")
    sensor = Kernel(np.array([3.0, 3.0]), 0.1, 0.4, 0.6, LinearTransfer.identity(SLICES, 1),
                    "sensor")
    return KernelSet((motor, sensor), ("x", "y"), ("v",), np.array([0.5, 0.5]), 0.5)


def test_manager_applies_the_right_kernel():
    manager = KernelManager(two_kernels())
    at_motor = manager.decide([1.02, 1.0], [0.3])
    assert at_motor.index == 0 and at_motor.kind == "motor"
    np.testing.assert_allclose(at_motor.next_state, [1.52, 1.0])
    assert at_motor.distance == pytest.approx(0.01)
    assert at_motor.activation == pytest.approx(np.exp(-0.01 ** 2 / (2 * 0.1 ** 2)))
    at_sensor = manager.decide(np.array([3.0, 2.95]), np.array([0.3]))
    assert at_sensor.index == 1 and at_sensor.kind == "sensor"
    np.testing.assert_allclose(at_sensor.next_state, [3.0, 2.95])


def test_states_outside_every_region_are_untouched():
    manager = KernelManager(two_kernels())
    # radius sigma sqrt(-2 ln 0.5) = 0.1177: c = 0.5 * 0.25 = 0.125 is outside
    assert manager.decide([1.25, 1.0], [0.0]) is None
    assert manager.decide([2.0, 2.0], [0.0]) is None
    assert manager.decide([1.2, 1.0], [0.0]) is not None          # c = 0.1: inside


def test_first_active_kernel_wins_when_regions_overlap():
    ks = two_kernels()
    later = Kernel(np.array([1.05, 1.0]), 0.1, 0.5, 0.5, LinearTransfer.identity(SLICES, 1),
                   "sensor")
    manager = KernelManager(ks.with_kernels((later,) + ks.kernels))
    assert manager.decide([1.0, 1.0], [0.0]).index == 0       # both active: the first one
    assert manager.decide([1.1, 1.0], [0.0]).index == 0
    assert manager.decide([0.9, 1.0], [0.0]).index == 0       # 0.075 from 'later': active


def test_bad_states_are_refused():
    manager = KernelManager(two_kernels())
    with pytest.raises(KernelError, match="3 values"):
        manager.decide([1.0, 1.0, 1.0], [0.0])
    with pytest.raises(KernelError, match="NaN"):
        manager.decide([np.nan, 1.0], [0.0])
    with pytest.raises(KernelError, match="action"):
        manager.decide([1.0, 1.0], [0.0, 1.0])


@pytest.mark.parametrize("seed,sigmas", [(0, (0.02, 0.06)), (1, (0.05, 0.05)),
                                         (2, (0.001, 0.08))])
def test_index_agrees_with_a_brute_force_scan(seed, sigmas):
    ks = random_kernel_set(500, d=4, seed=seed, sigmas=sigmas)
    index = KernelIndex(ks)
    rng = np.random.default_rng(100 + seed)
    centres = ks.centres()
    queries = np.vstack([rng.uniform(0, 1, (300, 4)),
                         centres[rng.integers(0, 500, 300)] + rng.normal(0, 0.03, (300, 4))])
    hits = 0
    for q in queries:
        got, want = index.first_active(q), ks.first_active_scan(q)
        assert (got is None) == (want is None)
        if got is not None:
            hits += 1
            assert got[0] == want[0] and got[1] == pytest.approx(want[1])
    assert 50 < hits < len(queries)      # both cases exercised


def test_empty_kernel_set():
    ks = two_kernels().with_kernels(())
    assert KernelManager(ks).decide([1.0, 1.0], [0.0]) is None


def test_held_sensors_of_a_kernel_are_checked():
    two = LinearTransfer((SensorTransfer("pos", 0, 1, np.eye(1), np.zeros((1, 1)), np.zeros(1)),
                          SensorTransfer("tilt", 1, 2, np.eye(1), np.zeros((1, 1)),
                                         np.zeros(1))), 2, 1, 0.0)
    assert Kernel(np.zeros(2), 0.1, 0.5, 0.5, two, "sensor").held == ("pos", "tilt")
    assert Kernel(np.zeros(2), 0.1, 0.5, 0.5, two, "sensor", held=("tilt",)).held == ("tilt",)
    with pytest.raises(KernelError, match="motor kernel holds no sensors"):
        Kernel(np.zeros(2), 0.1, 0.5, 0.5, two, "motor", held=("pos",))
    with pytest.raises(KernelError, match="unknown sensors"):
        Kernel(np.zeros(2), 0.1, 0.5, 0.5, two, "sensor", held=("gps",))
