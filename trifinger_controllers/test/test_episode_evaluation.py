"""run_episode / evaluate with trivial controllers: rate, held torque, errors, drops, seeding."""
import json

import numpy as np
import pytest

from trifinger_controllers import cube, evaluation, task
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.evaluation import DropDetector, episode_specs, evaluate, run_episode
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.types import CubePose

KIN = FingerKinematics()
GOAL = CubePose(np.array([0.05, 0.0, 0.06]), np.array([0, 0, 0, 1.0]))
INITIAL = CubePose(np.array([0.01, 0.02, 0.0325]), np.array([0, 0, 0, 1.0]))


class Hold(Controller):
    """Gravity compensation and joint PD at the initial configuration; counts its calls."""

    name = "hold"
    rate_hz = 200.0

    def reset(self, observation):
        self.calls = []

    def _torque(self, observation):
        self.calls.append(observation.robot.step)
        q, dq = observation.robot.position, observation.robot.velocity
        return KIN.gravity(q) + 2.0 * (KIN.initial_position - q) - 0.05 * dq


class Crash(Hold):
    name = "crash"

    def _torque(self, observation):
        if observation.robot.time > 0.05:
            raise RuntimeError("boom")
        return super()._torque(observation)


def test_hold_keeps_cube_in_place_and_calls_at_rate():
    controller = Hold()
    record = run_episode(SimulatedPlatform(), controller, 3, GOAL, INITIAL, seconds=0.5)
    assert record.error is None and not record.drop
    assert controller.calls == list(range(0, 500, 5))  # 200 Hz: every 5th step, from step 0
    assert record.compute_calls == 100 and record.compute_us_mean > 0
    assert record.sim_seconds == 0.5
    assert record.reward == pytest.approx(task.reward(3, GOAL, INITIAL), abs=5e-3)
    assert record.position_error_cm == pytest.approx(100 * task.position_error(GOAL, INITIAL), abs=0.2)
    # the cumulative reward sums the per-step reward of the (resting) cube
    assert record.cumulative_reward == pytest.approx(500 * record.reward, rel=1e-2)


def test_controller_exception_is_recorded_and_stops_the_episode(caplog):
    record = run_episode(SimulatedPlatform(), Crash(), 3, GOAL, INITIAL, seconds=5.0)
    assert record.error is not None and "RuntimeError: boom" in record.error
    assert "crash compute at t=0.055 s" in record.error
    assert record.sim_seconds == pytest.approx(0.055 + evaluation.SETTLE_SECONDS)
    assert "boom" in caplog.text  # logged with its traceback, not swallowed
    assert np.isfinite(record.reward)


def test_cube_falling_from_the_air_is_a_drop():
    in_air = CubePose(np.array([0.0, 0.0, 0.09]), np.array([0, 0, 0, 1.0]))
    record = run_episode(SimulatedPlatform(), Hold(), 3, GOAL, in_air, seconds=0.5)
    assert record.drop


def _tips_around(height: float) -> np.ndarray:
    """Joint positions with the three fingertips on the faces of an upright cube at ``height``."""
    angles = np.deg2rad([0.0, 120.0, 240.0]) + np.pi / 2
    tips = np.stack([0.04 * np.cos(angles), 0.04 * np.sin(angles), np.full(3, height)], axis=1)
    return KIN.inverse_kinematics(tips, KIN.initial_position, iterations=300)


def test_drop_detector_needs_the_cube_in_the_air_and_out_of_the_fingers():
    upright = np.array([0, 0, 0, 1.0])
    on_floor = CubePose(np.array([0.0, 0.0, 0.0325]), upright)
    lifted = CubePose(np.array([0.0, 0.0, 0.06]), upright)
    # on an edge, turned 45 deg about x: the centre 1.35 cm above rest, one edge on the floor
    on_edge = CubePose(np.array([0.0, 0.0, 0.0325 * np.sqrt(2)]),
                       np.array([np.sin(np.pi / 8), 0, 0, np.cos(np.pi / 8)]))
    assert cube.lowest_point(on_edge) == pytest.approx(0.0, abs=1e-9)
    away = KIN.initial_position
    set_down, in_air = _tips_around(0.0325), _tips_around(0.06)
    assert evaluation.holding_fingers(KIN, on_floor, set_down) == 3
    assert evaluation.holding_fingers(KIN, lifted, in_air) == 3
    assert evaluation.holding_fingers(KIN, lifted, away) == 0

    # pushed, tipped onto an edge and flipped over with no finger on it: never a drop
    detector = DropDetector(KIN)
    for pose in (on_floor, on_edge, on_floor, on_edge, on_floor):
        assert not detector.update(pose, away)
    # lifted and set down in the grasp: not a drop
    assert not detector.update(lifted, in_air)
    assert not detector.update(on_floor, set_down)
    # let go in the air, caught again before the floor, set down: not a drop
    assert not detector.update(lifted, away)
    assert not detector.update(lifted, in_air)
    assert not detector.update(on_floor, set_down)
    # let go in the air and caught just above the floor (lowest corner 5-10 mm): not a drop
    low = CubePose(np.array([0.0, 0.0, 0.0325 + 0.007]), upright)
    near_floor = _tips_around(0.0325 + 0.007)
    assert evaluation.holding_fingers(KIN, low, near_floor) == 3
    assert not detector.update(lifted, away)
    assert not detector.update(low, away) and detector.falling
    assert not detector.update(low, near_floor) and not detector.falling
    assert not detector.update(on_floor, set_down)
    # let go in the air: dropped when it reaches the floor, whatever the fingers do then
    assert not detector.update(lifted, in_air)
    assert not detector.update(lifted, away)
    assert detector.update(on_floor, set_down)
    assert detector.update(lifted, in_air)  # and it stays dropped


def test_episode_specs_depend_on_the_seed_only():
    a = episode_specs(4, 3, seed=5, orientation_error_deg=25.0)
    b = episode_specs(4, 2, seed=5, orientation_error_deg=25.0)
    for (g1, i1, s1), (g2, i2, s2) in zip(a, b):
        assert np.array_equal(g1.position, g2.position) and np.array_equal(i1.orientation, i2.orientation)
        assert s1 == s2
        assert np.rad2deg(task.orientation_error(g1, i1)) == pytest.approx(25.0)
    fixed = episode_specs(3, 2, seed=1, goal=GOAL)
    assert all(g is GOAL for g, _, _ in fixed)
    with pytest.raises(ValueError, match="outside the workspace"):
        episode_specs(3, 2, seed=1, goal=CubePose(np.array([0.5, 0.0, 0.05]), np.array([0, 0, 0, 1.0])))


def test_evaluate_result_layout():
    result = evaluate(Hold, level=2, trials=2, seed=3, seconds=0.3, progress=False)
    json.dumps(result, allow_nan=False)
    assert result["label"] == "simulation" and result["controller"] == "hold"
    assert len(result["trials"]) == 2 and result["drop_rate"] == 0.0 and result["errors"] == 0
    for key in ("reward", "position_error_cm", "orientation_error_deg", "cumulative_reward"):
        values = [t[key] for t in result["trials"]]
        assert result["mean"][key] == pytest.approx(np.mean(values))
        assert result["std"][key] == pytest.approx(np.std(values))
    trial = result["trials"][0]
    assert set(trial) >= {"trial", "reward", "position_error_cm", "orientation_error_deg", "drop",
                          "goal", "initial", "final", "compute_us_mean", "compute_us_p99", "wall_seconds"}
    assert result["compute_us"]["calls"] == 2 * 60
    # identical episodes for another controller with the same seed
    again = evaluate(Crash, level=2, trials=2, seed=3, seconds=0.3, progress=False)
    assert [t["goal"] for t in again["trials"]] == [t["goal"] for t in result["trials"]]
    assert [t["initial"] for t in again["trials"]] == [t["initial"] for t in result["trials"]]
    assert again["errors"] == 2


def test_summary_excludes_dropped_trials():
    base = dict(level=3, goal=GOAL, initial=INITIAL, final=INITIAL, cumulative_reward=0.0,
                orientation_error_deg=0.0, sim_seconds=1.0, wall_seconds=1.0, reset_seconds=0.0,
                compute_calls=0, compute_us_mean=float("nan"), compute_us_p99=float("nan"))
    records = [evaluation.EpisodeRecord(reward=-0.1, position_error_cm=1.0, drop=False, **base),
               evaluation.EpisodeRecord(reward=-0.3, position_error_cm=9.0, drop=True, **base)]
    summary = evaluation.summarise(records)
    assert summary["mean"]["position_error_cm"] == 1.0 and summary["drop_rate"] == 0.5
    assert summary["mean_all"]["position_error_cm"] == 5.0
    assert records[0].to_dict()["compute_us_mean"] is None


# ------------------------------------------------------------------------------ the evaluate CLI
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "evaluate")
# Runs the script with a stand-in controller registry (the real one is tested elsewhere), so the
# CLI's paths are checked whatever controllers exist.
PREAMBLE = textwrap.dedent("""
    import runpy, sys
    import numpy as np
    import trifinger_controllers.controllers as registry
    from trifinger_controllers.controllers.base import Controller
    from trifinger_controllers.params import Parameter, ParameterSet

    class Hold(Controller):
        name = "hold"
        rate_hz = 100.0
        def __init__(self, kinematics, gain):
            self.kinematics, self.gain = kinematics, gain
        def reset(self, observation):
            pass
        def _torque(self, observation):
            q = observation.robot.position
            return self.kinematics.gravity(q) + self.gain * (self.kinematics.initial_position - q)

    PARAMS = ParameterSet("hold", [Parameter("gain", 2.0, 0.0, 5.0, "joint stiffness")])
    registry.default_parameters = lambda name: PARAMS
    def make_controller(name, grasp, params, kinematics, level=3):
        return Hold(kinematics, (params or PARAMS).gain)
    registry.make_controller = make_controller
    MODE = sys.argv.pop(1)
    if MODE == "no-registry":
        del registry.make_controller
    sys.modules["trifinger_controllers.rpl_policy"] = None  # not written yet: ImportError
    sys.argv[0] = SCRIPT
    runpy.run_path(SCRIPT, run_name="__main__")
""")


def cli(*args, mode="fake"):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    code = f"SCRIPT = {os.path.abspath(SCRIPT)!r}\n" + PREAMBLE
    return subprocess.run([sys.executable, "-c", code, mode, *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_cli_writes_the_result(tmp_path):
    params = tmp_path / "hold.yaml"
    params.write_text("gain: 3.0\n")
    out = tmp_path / "out.json"
    run = cli("--controller", "cpc", "--grasp", "tg", "--level", "3", "--trials", "2", "--seed", "4",
              "--seconds", "0.2", "--params", params, "--json", out)
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())
    assert result["label"] == "simulation" and result["policy"] == "CPC-TG"
    assert result["params"] == {"gain": 3.0} and len(result["trials"]) == 2
    assert {"trials", "mean", "std", "drop_rate"} <= set(result)
    assert "CPC-TG level 3 (simulation, camera tracker, physics randomised, 2 trials" in run.stdout
    assert episode_specs(3, 1, 4)[0][0].position.tolist() == result["trials"][0]["goal"]["position"]


@pytest.mark.parametrize("extra, message", [
    (["--controller", "xyz"], "invalid choice: 'xyz'"),
    (["--grasp", "zz"], "invalid choice: 'zz'"),
    (["--goal", "0.3,0,0.05"], "outside the workspace: Position is outside of the arena circle"),
    (["--params", "MISSING"], "--params file not found"),
    (["--params", "BAD_KEY"], "unknown parameter 'gian'"),
    (["--params", "OUT_OF_RANGE"], r"gain: 9 outside its interval [0, 5]"),
    (["--rpl-policy", "MISSING"], "--rpl-policy file not found"),
    (["--residual", "MISSING"], "--rpl-policy file not found"),   # the old name, one release
    (["--level", "4", "--goal", "0,0,0.08,0.3826834,0,0,0.9238795", "--init-orientation-error", "10"],
     "impossible"),
])
def test_cli_bad_input_is_one_line_and_status_2(tmp_path, extra, message):
    (tmp_path / "BAD_KEY").write_text("gian: 1.0\n")
    (tmp_path / "OUT_OF_RANGE").write_text("gain: 9\n")
    base = {"--controller": "cic", "--grasp": "cg", "--level": "3", "--json": tmp_path / "o.json"}
    for option, value in zip(extra[::2], extra[1::2]):
        base[option] = tmp_path / value if value in ("MISSING", "BAD_KEY", "OUT_OF_RANGE") else value
    args = [x for pair in base.items() for x in pair]
    run = cli(*args)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("evaluate: error: ")
    assert message in run.stderr
    assert not (tmp_path / "o.json").exists()


def test_cli_missing_library_parts_are_status_1(tmp_path):
    run = cli("--controller", "mp", "--grasp", "pg", "--level", "3", "--json", tmp_path / "o.json",
              mode="no-registry")
    assert run.returncode == 1 and "make_controller is not available" in run.stderr
    policy = tmp_path / "policy.zip"
    policy.write_text("")
    run = cli("--controller", "mp", "--grasp", "pg", "--level", "3", "--residual", policy,
              "--json", tmp_path / "o.json")
    assert run.returncode == 1 and "residual policies are not available" in run.stderr
    assert run.stderr.count("\n") == 1
