"""The vehicle experiment end to end on a few missions: every JSON key, the plots, a kernel file
that loads, determinism for a seed, and bad input; on a seeded run of 10 missions, that the
kernels close part of the gap and that the prediction experiment (each program's ATR in the
simulations against its deployment) is computed and carries the kernels' effect."""
import json
import math
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.generation import GenerationConfig
from kernel_manager_ros.kernel_file import load_kernels
from kernel_manager_ros.kernel import Kernel, KernelSet
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.transfer import LinearTransfer
from kernel_manager_ros.experiments.vehicle import (
    ExperimentConfig, KernelHook, run_experiment, track_distance, weighted_spec)
from kernel_manager_ros.vehicle.mission import MissionConfig
from kernel_manager_ros.vehicle.model import VehicleConfig, VehicleModel
from kernel_manager_ros.vehicle.run import StepContext, run_missions

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "vehicle-experiment")
KEYS = {"atr_design", "atr_deploy", "atr_kernels", "gap_closure", "atr_redesign_kernels",
        "atr_redeploy", "kernels", "sensor_case", "atr_curves", "redesign", "config", "timings",
        "label", "atr_kernels_alg1", "gap_closure_alg1", "prediction", "atr_redeploy_fresh_seeds"}
PROGRAMS = ("design", "speed_only", "pitch_rule", "redesigned", "redesigned_sarsa")
SIMULATIONS = ("design_sim", "kernels_alg1", "kernels")


def small(tmp_path, name, **changes):
    config = ExperimentConfig(
        missions=3, seed=5, work_dir=str(tmp_path / name), plots_dir=str(tmp_path / name / "p"),
        rounds=2, generation=GenerationConfig(rollouts=100, epsilon_p=0.5, sensor_kernels=False),
        sensor_generation=GenerationConfig(rollouts=100),
        redesign_grid={"pitch_speed_gain": (0.0, 4.0)}, sarsa_episodes=10, sarsa_repeats=1)
    return replace(config, **changes)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("experiment")
    return [run_experiment(small(tmp, name), progress=False) for name in ("a", "b")], tmp


def test_small_run_has_every_key_plots_and_a_loadable_kernel_file(two_runs):
    (result, _), tmp = two_runs
    assert KEYS <= set(result)
    assert "deployment" in result["label"] and "not a real robot" in result["label"]
    assert set(result["kernels"]) >= {"motor", "sensor"}
    assert result["kernels"]["sensor"] == 0          # the ramp case drops identity transfers
    assert result["atr_design"] == 3.0 and result["atr_deploy"] < 0   # the ramp costs deadlines
    for key in ("design", "deploy", "kernels", "kernels_alg1", "redesign_kernels", "redeploy"):
        assert len(result["atr_curves"][key]) == 3
    gap = result["atr_design"] - result["atr_deploy"]
    assert result["gap_closure"] == pytest.approx(
        (result["atr_design"] - result["atr_kernels"]) / gap)
    m = result["median_total_reward"]
    if m["design"] != m["deploy"]:
        assert result["gap_closure_median"] == pytest.approx((m["design"] - m["kernels"]) / (m["design"] - m["deploy"]))
    assert result["gap_closure_alg1"] == pytest.approx(
        (result["atr_design"] - result["atr_kernels_alg1"]) / gap)
    candidates = result["redesign"]["candidates"]
    assert len(candidates) == 2
    # the search keeps the best candidate in the kernel simulation (ties: the first); fails if
    # the selection takes another candidate or reports another candidate's ATR
    best = max(range(2), key=lambda k: (candidates[k]["atr_kernels"], -k))
    assert result["redesign"]["best"] == candidates[best]["params"]
    assert result["atr_redesign_kernels"] == candidates[best]["atr_kernels"]
    sarsa = result["redesign_sarsa"]
    assert sarsa["episodes"] == 10 and sarsa["learner"]["updates"] > 0
    assert set(sarsa["greedy"]["speed_factors"]) <= set(sarsa["learner"]["speed_factors"])
    assert len(result["atr_curves"]["redeploy_sarsa"]) == 3
    # stability over seeds: the first training is the redesign's (its prediction row), the
    # repeat has its own seeds; the count within 10 % of the design is of these rows
    trainings = sarsa["seeds"]["trainings"]
    first = result["prediction"]["programs"]["redesigned_sarsa"]
    assert [t["training"] for t in trainings] == [0, 1]
    assert trainings[0]["greedy"] == first["speed_rule"] and trainings[0]["atr_deploy"] == first["atr_deploy"]
    assert trainings[0]["learner_seed"] != trainings[1]["learner_seed"]
    assert all(math.isfinite(t[k]) for t in trainings for k in ("atr_kernels", "atr_deploy", "training_atr"))
    assert sarsa["seeds"]["within_10_percent"] == sum(
        abs(t["atr_deploy"] - result["atr_design"]) <= 0.1 * abs(result["atr_design"]) for t in trainings)
    sensor = result["sensor_case"]
    assert sensor["kernels"]["sensor"] > 0           # the 1 Hz GPS gives identity transfers
    assert sensor["track_distance_design"] > 0 and sensor["track_distance_kernels"] >= 0
    assert len(result["plots"]) == 5 and all(os.path.getsize(p) > 10_000
                                             for p in result["plots"])
    kernels = load_kernels(result["kernels"]["file"])
    assert kernels.counts()["motor"] == result["kernels"]["motor"]
    assert kernels.metadata["label"] == result["label"]
    assert os.path.isfile(tmp / "a" / "design.bag") and os.path.isfile(tmp / "a" / "deploy.bag")
    json.dumps(result)                                # JSON-ready


def test_same_seed_same_figures(two_runs):
    (a, b), _ = two_runs
    for key in ("atr_design", "atr_deploy", "atr_kernels", "atr_redesign_kernels",
                "atr_redeploy"):
        assert a[key] == b[key], key
    assert a["kernels"]["motor"] == b["kernels"]["motor"]
    for key in ("motor", "sensor", "applied"):
        assert a["sensor_case"]["kernels"][key] == b["sensor_case"]["kernels"][key]
    assert a["sensor_case"]["track_distance_kernels"] == b["sensor_case"]["track_distance_kernels"]
    assert a["atr_curves"] == b["atr_curves"]
    assert a["prediction"] == b["prediction"]
    assert a["redesign_sarsa"] == b["redesign_sarsa"]


@pytest.fixture(scope="module")
def mechanism_run(tmp_path_factory):
    """10 missions, 3 rounds of 300 roll-outs (measured: gap closure 28 % with seed 5, 20 % with
    seed 3; Algorithm 1 alone 0 %), no sensor case: about 12 s."""
    config = small(tmp_path_factory.mktemp("mechanism"), "m", missions=10, rounds=3,
                   plots_dir=None, sensor_case=False,
                   generation=replace(ExperimentConfig().generation, rollouts=300),
                   redesign_grid={"pitch_speed_gain": (0.0, 8.0), "max_speed": (1.7,)},
                   sarsa_episodes=30)
    return run_experiment(config, progress=False)


def test_kernels_close_part_of_the_gap(mechanism_run):
    r = mechanism_run
    assert r["atr_deploy"] < r["atr_design"]
    # fails when the kernels do nothing to the original program (closure 0: the kernel run is
    # the design run) or push it past the deployment (closure > 1)
    assert 0.0 < r["gap_closure"] <= 1.0
    # Algorithm 1 alone is reported next to it, on the same scale (finite; it may be 0)
    assert math.isfinite(r["gap_closure_alg1"]) and r["gap_closure_alg1"] <= 1.0


def test_prediction_error_per_program(mechanism_run):
    p = mechanism_run["prediction"]
    assert tuple(p["programs"]) == PROGRAMS
    assert p["programs"]["redesigned"]["params"] == mechanism_run["redesign"]["best"]
    for name, row in p["programs"].items():
        for sim in SIMULATIONS:
            # fails if an ATR or an error is missing, NaN, or not the difference it claims
            assert math.isfinite(row[f"atr_{sim}"]), (name, sim)
            assert row[f"error_{sim}"] == pytest.approx(row[f"atr_{sim}"] - row["atr_deploy"])
    for sim in SIMULATIONS:
        assert p["mean_abs_error"][sim] == pytest.approx(
            np.mean([abs(row[f"error_{sim}"]) for row in p["programs"].values()]))
    assert mechanism_run["atr_redeploy_fresh_seeds"] == p["programs"]["redesigned"]["atr_deploy"]


def test_kernel_simulation_predicts_the_design_program_better_than_the_design_sim(
        mechanism_run):
    design = mechanism_run["prediction"]["programs"]["design"]
    # the design program's deployment gap on the fresh seeds: the design simulation misses it
    assert design["error_design_sim"] > 1.0
    # fails when the kernels stop acting on fresh seeds (the kernel simulation's error is then
    # the design simulation's) or overshoot the deployment by more than the gap
    assert abs(design["error_kernels"]) < design["error_design_sim"]


def test_an_empty_kernel_set_leaves_the_simulation_as_designed():
    """With kernels disabled the kernel simulation is the design simulation: the same ATR (and
    mission totals), so the gap closure is 0. Fails if the hook changes the simulation or the
    program's random stream without a kernel."""
    config = ExperimentConfig()
    spec = StateSpec.from_yaml(config.topics_config)
    mission = MissionConfig.from_yaml(config.mission_config)
    design = VehicleConfig.from_yaml(config.design_config)
    empty = KernelSet((), spec.state_names, spec.action_names, spec.weights, 0.5)
    hook = KernelHook(empty, spec, mission.period)
    plain = run_missions(design, mission, spec, 2, seed=11)
    hooked = run_missions(design, mission, spec, 2, seed=11, hook=hook)
    np.testing.assert_array_equal(plain.totals, hooked.totals)
    np.testing.assert_array_equal(plain.missions[-1].poses, hooked.missions[-1].poses)
    assert hook.steps > 0 and hook.summary()["applied"] == {"motor": 0, "sensor": 0}


def test_bad_input():
    with pytest.raises(KernelError, match="missions"):
        run_experiment(ExperimentConfig(missions=0), progress=False)
    with pytest.raises(KernelError, match="rounds"):
        run_experiment(ExperimentConfig(rounds=0), progress=False)
    with pytest.raises(KernelError, match="sarsa_episodes"):
        run_experiment(ExperimentConfig(sarsa_episodes=-1), progress=False)
    with pytest.raises(KernelError, match="reserved"):
        run_experiment(ExperimentConfig(prediction_programs={"design": {}}), progress=False)
    spec = StateSpec.from_yaml(ExperimentConfig().topics_config)
    with pytest.raises(KernelError, match="unknown sensors"):
        weighted_spec(spec, {"lidar": (1.0,)})
    out = subprocess.run([sys.executable, SCRIPT, "--missions", "0"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["vehicle-experiment: error: --missions must be at least 1, got 0"]


def test_weights_and_track_distance():
    spec = StateSpec.from_yaml(ExperimentConfig().topics_config)
    heavy = weighted_spec(spec, {"pitch": (20.0,)})
    assert heavy.weights[-1] == pytest.approx(20.0 / 23.0)
    line = np.column_stack([np.linspace(0, 10, 11), np.zeros(11)])
    assert track_distance(line, line) == 0.0
    assert track_distance(line + [0.0, 0.5], line) == pytest.approx(0.5)


def test_kernel_hook_holds_only_the_sensors_a_sensor_kernel_holds():
    config = ExperimentConfig()
    spec = StateSpec.from_yaml(config.topics_config)
    slices = spec.sensor_slices
    d, m = len(spec.state_names), len(spec.action_names)
    held = Kernel(np.zeros(d), 1e6, 0.5, 0.5, LinearTransfer.identity(slices, m), "sensor",
                  held=("gps", "gps_vel"))              # active everywhere
    hook = KernelHook(KernelSet((held,), spec.state_names, spec.action_names, spec.weights,
                                0.5), spec, 0.1)
    vehicle = VehicleModel(VehicleConfig.from_yaml(config.design_config))
    state, next_state = np.arange(d, dtype=float), np.arange(d, dtype=float) + 10.0
    stamps, next_stamps = np.array([1.0, 1.0, 1.0]), np.array([1.1, 1.1, 1.1])
    before = vehicle.get_state()
    out = hook(StepContext(1.0, state, stamps, np.zeros(m), next_state, next_stamps, vehicle,
                           spec))
    gps = np.r_[slices["gps"], slices["gps_vel"]]
    np.testing.assert_array_equal(out.state[gps], state[gps])          # held: s_t's values
    np.testing.assert_array_equal(out.state[slices["pitch"]], next_state[slices["pitch"]])
    np.testing.assert_array_equal(out.stamps, [1.0, 1.0, 1.1])          # eq. 9: stamps kept
    assert vehicle.get_state() == before                                 # simulation untouched
    assert hook.summary()["applied"] == {"motor": 0, "sensor": 1}
