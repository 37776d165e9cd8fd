"""The exact limit check of the executed interpolant (motion_limits): closed forms of a cubic,
overshoot between knots, acceleration and jerk limits, and the generator's own trajectories."""
import numpy as np
import pytest

from panda_sim2real.errors import TrajectoryRejected
from panda_sim2real.limits import JointLimits
from panda_sim2real.motion_limits import HermiteSegments, check_motion_limits, motion_extremes
from panda_sim2real.trajectory import PlannedTrajectory
from panda_sim2real.trajectory_generation import TrajectoryGenerator

LIMITS = JointLimits.from_yaml()


def plan(times, q_joint0, v_joint0=None):
    """A trajectory moving joint 0 only, the others held at home."""
    times = np.asarray(times, dtype=float)
    pos = np.tile(LIMITS.home, (len(times), 1))
    pos[:, 0] = q_joint0
    vel = np.zeros_like(pos)
    if v_joint0 is not None:
        vel[:, 0] = v_joint0
    return PlannedTrajectory(times, pos, vel)


def test_segments_match_the_sampled_interpolant_and_its_derivatives():
    p = plan([0.0, 0.4, 1.0], [0.0, 0.3, -0.1], [0.0, 0.5, 0.0])
    seg = HermiteSegments.of(p)
    for t in np.linspace(0.01, 0.99, 23):
        k = int(np.searchsorted(p.times, t, side="right")) - 1
        s = np.array([(t - p.times[k]) / seg.h[k]])
        one = HermiteSegments(tuple(c[k:k + 1] for c in seg.c), seg.h[k:k + 1])
        q, qd = p.sample(t)
        np.testing.assert_allclose(one.position(s)[0], q, atol=1e-12)
        np.testing.assert_allclose(one.velocity(s)[0], qd, atol=1e-10)
        eps = 1e-6   # acceleration and jerk against central differences of the sampled velocity
        acc = (p.sample(t + eps)[1] - p.sample(t - eps)[1]) / (2 * eps)
        np.testing.assert_allclose(one.acceleration(s)[0], acc, atol=1e-4)
    # constant jerk of a cubic: 6 c3 / h^3, here for the rest-to-rest segment 0 -> 0.3 in 0.4 s
    assert seg.jerk()[0, 0] == pytest.approx(6 * (2 * 0.0 + 0.0 - 2 * 0.3 + 0.5 * 0.4) / 0.4 ** 3)


def test_a_rest_to_rest_cubic_has_its_closed_form_extremes():
    d, T = 0.5, 2.0                           # 3 d/(2T) peak velocity, 6 d/T^2 peak acceleration
    ext = motion_extremes(plan([0.0, T], [0.0, d]))
    assert ext["velocity"][0][0] == pytest.approx(1.5 * d / T)
    assert ext["velocity"][1][0] == pytest.approx(T / 2)
    assert ext["acceleration"][0][0] == pytest.approx(6 * d / T ** 2)
    assert ext["jerk"][0][0] == pytest.approx(12 * d / T ** 3)


def test_overshoot_between_knots_is_caught_although_every_knot_is_inside():
    top = LIMITS.position_max[0]
    # knots inside the limit, but a steep tangent at the first knot overshoots between them
    p = plan([0.0, 1.0], [top - 0.05, top - 0.01], [1.5, 0.0])
    assert np.all(p.positions[:, 0] <= top)
    with pytest.raises(TrajectoryRejected, match="between knots is outside"):
        check_motion_limits(p, LIMITS)


@pytest.mark.parametrize("key, times, q, v", [
    ("velocity", [0.0, 0.5], [0.0, 1.0], None),          # peak 3 rad/s > 2.175
    ("acceleration", [0.0, 0.35], [0.0, 0.4], None),     # 19.6 rad/s^2 > 15
    ("jerk", [0.0, 0.05], [0.0, 0.002], None),          # 192 rad/s^3: under 7500 ...
])
def test_each_limit_names_joint_value_and_time(key, times, q, v):
    p = plan(times, q, v)
    if key == "jerk":                                     # ... so scale the limits for this case
        limits = JointLimits(**{**LIMITS.__dict__, "jerk": LIMITS.jerk / 100.0})
    else:
        limits = LIMITS
    with pytest.raises(TrajectoryRejected, match=rf"panda_joint1 {key} [0-9.]+ \S+ exceeds the limit"):
        check_motion_limits(p, limits)


def test_generated_trajectories_of_every_kind_are_within_the_limits():
    generator = TrajectoryGenerator(LIMITS, seed=11)
    q = LIMITS.home.copy()
    for _ in range(12):
        move = generator.next(q, ("single", "multi", "cartesian"))
        check_motion_limits(move.trajectory, LIMITS)
        q = move.trajectory.positions[-1]
    generator.close()
