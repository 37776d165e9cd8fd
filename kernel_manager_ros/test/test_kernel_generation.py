"""Algorithm 1 (GenKer) on small synthetic histories, and the generate tool end to end."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from kernel_fixtures import DT, point_episodes, point_history, point_spec
from kernel_manager_ros.bag_history import write_episode_bag
from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig, generate_kernels
from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.kernel_file import load_kernels
from kernel_manager_ros.manager import KernelManager

GENERATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "scripts", "generate")
SLOW = (4.0, 6.0)


@pytest.mark.parametrize("dims", [1, 2])
def test_motor_kernels_sit_where_deployment_is_slower(dims):
    spec = point_spec(0.05, dims)
    sim, phy = point_history(dims=dims), point_history(dims=dims, slow=SLOW)
    kernels, report = generate_kernels(sim, phy, spec, GenerationConfig(rollouts=150, seed=1),
                                       progress=False)
    assert report.common_states > 50 and report.divergences > 0
    assert report.motor_kernels >= 5 and report.sensor_kernels == 0
    centres = kernels.centres()[:, 0]
    assert ((centres >= SLOW[0] - 0.1) & (centres < SLOW[1])).all()
    for k in kernels.kernels:
        # deployment moves 0.05 per step there: f_k(s, a) = s + 0.05 in x
        np.testing.assert_allclose(k.transfer.apply(k.centre, [1.0])[0] - k.centre[0], 0.05,
                                   atol=1e-6)
        assert k.p_sim + k.p_phy == pytest.approx(1.0)
    supports = [k.support for k in kernels.kernels]
    assert supports == sorted(supports, reverse=True) and sum(supports) == report.divergences
    # the manager slows the simulation down inside the region, nowhere else
    manager = KernelManager(kernels)
    s = np.zeros(dims)
    s[0] = kernels.kernels[0].centre[0]
    assert manager.decide(s, [1.0]).kind == "motor"
    s[0] = 2.0
    assert manager.decide(s, [1.0]) is None


def test_identical_histories_give_no_kernels():
    h = point_history()
    kernels, report = generate_kernels(h, h, point_spec(), GenerationConfig(rollouts=50),
                                       progress=False)
    assert len(kernels) == 0 and report.divergences == 0 and report.rollouts == 50


def test_a_sensor_that_holds_its_value_gives_sensor_kernels():
    spec = point_spec(0.05)
    sim, phy = point_history(), point_history(hold=5)
    kernels, report = generate_kernels(sim, phy, spec, GenerationConfig(rollouts=200, seed=2),
                                       progress=False)
    counts = kernels.counts()
    assert counts["sensor"] >= 10 and counts["sensor"] > 3 * counts["motor"]
    for k in kernels.kernels:
        if k.kind == "sensor":
            assert k.transfer.displacement == 0.0
            np.testing.assert_array_equal(k.transfer.apply(k.centre, [1.0]), k.centre)
    dropped, report2 = generate_kernels(sim, phy, spec, GenerationConfig(
        rollouts=200, seed=2, sensor_kernels=False), progress=False)
    assert dropped.counts()["sensor"] == 0 and report2.dropped_sensor == counts["sensor"]


def test_generation_is_seeded():
    spec, sim, phy = point_spec(), point_history(), point_history(slow=SLOW)
    runs = [generate_kernels(sim, phy, spec, GenerationConfig(rollouts=60, seed=s),
                             progress=False)[0] for s in (7, 7, 8)]
    assert np.array_equal(runs[0].centres(), runs[1].centres())
    assert [k.support for k in runs[0].kernels] == [k.support for k in runs[1].kernels]
    assert not (len(runs[0]) == len(runs[2]) and
                [k.support for k in runs[0].kernels] == [k.support for k in runs[2].kernels])


def test_bad_input():
    spec, sim = point_spec(), point_history()
    with pytest.raises(KernelError, match="spec has 1"):
        generate_kernels(sim, point_history(dims=2), spec, progress=False)
    nan = History(**{**sim.__dict__, "states": np.where(np.arange(len(sim))[:, None] == 3,
                                                        np.nan, sim.states)})
    with pytest.raises(KernelError, match="deployment history: states holds NaN"):
        generate_kernels(sim, nan, spec, progress=False)
    with pytest.raises(KernelError, match="rollouts"):
        generate_kernels(sim, sim, spec, GenerationConfig(rollouts=0), progress=False)


def write_bags(folder, spec, **kwargs):
    episodes = point_episodes(n=4, **kwargs)
    paths = []
    for k, e in enumerate(episodes):
        times = 100.0 * k + DT * np.arange(e.states.shape[0])
        stamps = e.stamps + 100.0 * k
        e = type(e)(e.states, e.actions, e.rewards, stamps)
        paths.append(write_episode_bag(os.path.join(folder, f"ep{k}.bag"), spec, [e], [times]))
    return paths


def run_generate(*args):
    return subprocess.run([sys.executable, GENERATE, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_generate_tool_end_to_end(tmp_path):
    spec = point_spec(0.05)
    config = tmp_path / "topics.yaml"
    config.write_text(yaml.safe_dump(spec.to_dict()))
    sim = write_bags(str(tmp_path / "sim"), spec)
    real = write_bags(str(tmp_path / "real"), spec, slow=SLOW)
    out, figures = tmp_path / "kernels.yaml", tmp_path / "out.json"
    done = run_generate("--sim-bag", *sim, "--real-bag", *real, "--config", config, "--out",
                        out, "--rollouts", 100, "--seed", 3, "--json", figures)
    assert done.returncode == 0, done.stderr
    assert "motor" in done.stdout and str(out) in done.stdout
    result = json.loads(figures.read_text())
    kernels = load_kernels(out, expected_state_names=spec.state_names)
    assert result["kernels"] == len(kernels) == result["motor_kernels"] > 0
    assert result["sim_steps"] == 4 * 100 and result["rollouts"] == 100
    assert ((kernels.centres()[:, 0] > SLOW[0] - 0.1) & (kernels.centres()[:, 0] < SLOW[1])).all()
    assert kernels.metadata["config"]["seed"] == 3

    other = tmp_path / "other.yaml"
    data = spec.to_dict()
    data["sensors"][0]["topic"] = "/elsewhere"
    other.write_text(yaml.safe_dump(data))
    bad = run_generate("--sim-bag", *sim, "--real-bag", *real, "--config", other, "--out", out)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert "has no topic /elsewhere" in bad.stderr
    missing = run_generate("--sim-bag", tmp_path / "x.bag", "--real-bag", *real, "--config",
                           config, "--out", out)
    assert missing.returncode == 2 and "bag not found" in missing.stderr


def test_states_fit_follows_the_deployment_mean_where_the_branch_fit_overshoots():
    # half of the deployment episodes are slowed in SLOW, half are not: at the region's start
    # the deployment moves 0.05 or 0.1 per step, 0.075 on average
    spec = point_spec(0.05)
    sim = point_history()
    phy = History.from_episodes(point_episodes(10, slow=SLOW) + point_episodes(10))
    steps = {}
    for rows in ("branch", "states"):
        kernels, _ = generate_kernels(sim, phy, spec, GenerationConfig(
            rollouts=300, seed=3, epsilon_p=0.3, fit_rows=rows), progress=False)
        first = min(kernels.kernels, key=lambda k: k.centre[0])
        assert SLOW[0] - 0.1 <= first.centre[0] < SLOW[0] + 0.1
        steps[rows] = first.transfer.apply(first.centre, [1.0])[0] - first.centre[0]
    assert steps["branch"] == pytest.approx(0.05, abs=1e-6)
    assert 0.06 < steps["states"] < 0.09
    with pytest.raises(KernelError, match="fit_rows"):
        GenerationConfig(fit_rows="all").check()


def test_a_held_gps_next_to_a_noisy_fast_sensor_makes_a_sensor_kernel_holding_only_the_gps():
    # state = (gps x, tilt): the deployment's gps holds for 5 steps (stamp unchanged), the tilt
    # sensor reports fresh noise at every step; judged on the whole state this moved (the old
    # rule made motor kernels that teleported the simulation back), per sensor the gps held
    rng = np.random.default_rng(5)
    spec = StateSpec.from_dict({
        "epsilon_c": 0.05,
        "sensors": [{"name": "gps", "topic": "/p/gps", "type": "geometry_msgs/PointStamped",
                     "fields": ["point.x"], "weights": [1.0]},
                    {"name": "tilt", "topic": "/p/tilt", "type": "geometry_msgs/PointStamped",
                     "fields": ["point.x"], "weights": [1.0]}],
        "actions": [{"name": "cmd", "topic": "/p/cmd", "type": "std_msgs/Float64",
                     "fields": ["data"]}],
        "reward": {"name": "r", "topic": "/p/r", "type": "std_msgs/Float64", "fields": ["data"]}})

    def episodes(hold: int) -> History:
        out = []
        for e in point_episodes(20, hold=hold):
            tilt = rng.normal(0.0, 0.005, e.states.shape[0])
            t = np.arange(e.states.shape[0]) * DT
            out.append(Episode(np.column_stack([e.states[:, 0], tilt]), e.actions, e.rewards,
                               np.column_stack([e.stamps[:, 0], t])))
        return History.from_episodes(out)

    kernels, _ = generate_kernels(episodes(1), episodes(5), spec,
                                  GenerationConfig(rollouts=200, seed=2), progress=False)
    sensor = [k for k in kernels.kernels if k.kind == "sensor"]
    assert len(sensor) >= 10 and len(sensor) > 3 * kernels.counts()["motor"]
    assert all(k.held == ("gps",) for k in sensor)
    decision = KernelManager(kernels).decide(sensor[0].centre, [1.0])
    assert decision.kind == "sensor" and decision.held == ("gps",)
    assert decision.next_state[0] == pytest.approx(sensor[0].centre[0])   # identity on the gps
