"""The physics rate at which the simulator's PID is stable on a model (stability.py)."""
import dataclasses

import numpy as np
import pytest

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import (REALITY_CONFIG_FILE, SIM_CONFIG_FILE, Inertial, PIDGains,
                                         RobotConfig)
from panda_sim2real.stability import spectral_radius, stable_physics_rate

LIMITS = JointLimits.from_yaml()
POSES = [LIMITS.home, LIMITS.home + np.array([0.3, -0.4, 0.2, 0.3, -0.5, 0.4, 0.6]),
         np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])]   # joints 1 and 3 aligned


def with_light_links(config: RobotConfig, scale: float) -> RobotConfig:
    """The config with every link's inertia about its centre of mass scaled (a lighter model,
    as identification finds it)."""
    inertials = {f"panda_link{k}": Inertial(mass=1.0, com=(0.0, 0.0, 0.05),
                                            inertia=(0.1 * scale, 0.1 * scale, 0.1 * scale,
                                                     0.0, 0.0, 0.0))
                 for k in range(1, 8)}
    return dataclasses.replace(config, inertials=inertials)


def test_the_shipped_simulator_is_stable_at_its_own_rate():
    assert stable_physics_rate(RobotConfig.from_yaml(SIM_CONFIG_FILE), POSES, LIMITS) == 1000.0


def test_a_lighter_model_needs_a_faster_rate_and_an_impossible_one_is_refused():
    nominal = RobotConfig.from_yaml(SIM_CONFIG_FILE)
    light = with_light_links(nominal, 0.05)
    assert stable_physics_rate(light, POSES, LIMITS) > 1000.0
    with pytest.raises(ConfigError, match="not stable"):
        stable_physics_rate(with_light_links(nominal, 1e-5), POSES, LIMITS, rates=(1000.0, 2000.0))


def test_the_linearised_step_matches_a_damper_on_one_inertia():
    gains = PIDGains(p=np.array([1.0]), i=np.zeros(1), d=np.array([30.0]), i_clamp=np.zeros(1))
    inertia = np.array([[0.01]])
    assert spectral_radius(inertia, gains, 0.0005) < 1.0     # D dt / I = 1.5 < 2
    assert spectral_radius(inertia, gains, 0.001) > 1.0      # D dt / I = 3 > 2


def test_other_controllers_keep_their_rate_and_configurations_are_needed():
    reality = RobotConfig.from_yaml(REALITY_CONFIG_FILE)
    assert stable_physics_rate(reality, POSES, LIMITS) == reality.physics_rate
    with pytest.raises(ConfigError, match="at least one configuration"):
        stable_physics_rate(RobotConfig.from_yaml(SIM_CONFIG_FILE), [], LIMITS)
