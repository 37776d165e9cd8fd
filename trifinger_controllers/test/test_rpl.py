"""Residual policy learning (rpl_policy.py, rpl_training.py, scripts/train-rpl): env spaces and reward, bounded
residuals, train/deploy consistency, the policy file (round trip, refusals, no code execution), a
tiny SAC run and `evaluate --rpl-policy`."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

from trifinger_controllers import evaluation, rpl_policy, rpl_training, task
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.rpl_policy import (
    INPUT_DIM, RESIDUAL_SCALE, STATE_DIM, PolicyFileError, ResidualController, ResidualPolicy,
    load_policy, policy_input, policy_metadata, read_policy, save_policy,
)
from trifinger_controllers.rpl_training import ResidualEnv, RewardWeights, build_sb3_actor
from trifinger_controllers.types import TORQUE_LIMIT

KIN = FingerKinematics()
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(PACKAGE, "scripts")


class Hold(Controller):
    """Gravity compensation and joint PD at the initial configuration, 200 Hz."""

    name = "hold"
    rate_hz = 200.0

    def reset(self, observation):
        pass

    def _torque(self, observation):
        q, dq = observation.robot.position, observation.robot.velocity
        return KIN.gravity(q) + 2.0 * (KIN.initial_position - q) - 0.05 * dq


def random_policy(seed=0, bias=0.0, base="hold", rate=200.0):
    """An actor with random weights (non-zero mean head) and its metadata."""
    torch.manual_seed(seed)
    actor = build_sb3_actor()   # what training produces
    with torch.no_grad():
        actor.mu.weight.normal_(0.0, 0.5)
        actor.mu.bias.fill_(bias)
    return ResidualPolicy(actor, policy_metadata(base, "tg", 3, rate))


def make_env(seconds=0.05):
    return ResidualEnv(Hold, level=3, episode_seconds=seconds, kinematics=KIN)


def test_env_spaces_reset_and_period():
    env = make_env()
    assert env.observation_space.shape == (INPUT_DIM,) == (STATE_DIM + 9,)
    assert env.action_space.shape == (9,)
    assert np.all(env.action_space.low == -1.0) and np.all(env.action_space.high == 1.0)
    assert env.period == 5 and env.dt == pytest.approx(0.005)   # one 200 Hz period = 5 physics steps
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    again, _ = make_env().reset(seed=3)
    assert np.array_equal(obs, again)                           # episodes come from the seed
    assert not np.array_equal(obs, make_env().reset(seed=4)[0])
    # the last 9 inputs are the base torque / limit
    assert np.allclose(obs[STATE_DIM:] * TORQUE_LIMIT, env.base_torque, atol=1e-6)


def test_env_reward_terms_and_truncation():
    env = make_env(seconds=0.05)
    env.reset(seed=1)
    steps, truncated = 0, False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(np.zeros(9))
        steps += 1
        assert not terminated
    assert steps == 10 and env.platform.steps == 50
    terms, w = info["terms"], RewardWeights()
    assert terms["task"] == pytest.approx(task.reward(3, env.goal, env.platform.true_cube_pose()))
    assert terms["action"] == 0.0 and terms["drop"] == 0.0
    assert terms["grasp"] == 0.0                                 # the held fingers do not touch the cube
    assert terms["tip_force"] == pytest.approx(0.0, abs=1e-9)    # no-contact sensor reading 0.05
    assert reward == pytest.approx(w.task * terms["task"] + w.action * terms["action"]
                                   + w.tip_force * terms["tip_force"] + w.grasp * terms["grasp"]
                                   - w.drop * terms["drop"])
    env.reset(seed=1)
    _, full, *_ = env.step(np.ones(9))
    _, info = env.reset(seed=1)
    _, zero, *_ = env.step(np.zeros(9))
    assert full < zero                                           # action regularisation


def test_residual_is_bounded():
    env = make_env()
    env.reset(seed=2)
    applied = []
    step = env.platform.step
    env.platform.step = lambda torque: (applied.append(np.array(torque)), step(torque))[1]
    base = env.base_torque.copy()
    _, _, _, _, info = env.step(np.array([5.0, -7.0, 0.5, 1, -1, 0, 2, -2, 0.1]))
    assert np.allclose(info["residual"], RESIDUAL_SCALE * np.array([1, -1, 0.5, 1, -1, 0, 1, -1, 0.1]))
    assert len(applied) == 5 and all(np.array_equal(a, applied[0]) for a in applied)  # held for the period
    assert np.allclose(applied[0], np.clip(base + info["residual"], -TORQUE_LIMIT, TORQUE_LIMIT))
    # a policy pushed to saturation still adds at most 0.05 N m
    for bias in (50.0, -50.0):
        controller = ResidualController(Hold(), random_policy(bias=bias))
        obs = SimulatedPlatform().reset(env.initial, env.goal)
        controller.reset(obs)
        torque = controller.compute(obs)
        assert np.all(np.abs(controller.last_residual) <= RESIDUAL_SCALE + 1e-12)
        assert np.allclose(np.abs(controller.last_residual), RESIDUAL_SCALE, rtol=1e-3)
        combined = controller.last_base + controller.last_residual
        assert np.allclose(torque, np.clip(combined, -TORQUE_LIMIT, TORQUE_LIMIT))


def test_env_and_controller_see_the_same_inputs():
    """Training (ResidualEnv) and deployment (ResidualController in run_episode) call the base
    controller and the policy at the same instants with the same inputs: identical episodes."""
    policy = random_policy(seed=1)
    env = make_env(seconds=0.1)
    obs, _ = env.reset(seed=5)
    truncated = False
    while not truncated:
        obs, _, _, truncated, _ = env.step(policy.action(obs))
    trained = env.platform.true_cube_pose(), env.platform.robot_state().position
    # the episode's seed (tracker noise, physics) and models, as the env drew them
    platform = SimulatedPlatform(seed=env.platform.seed, perception=env.options.perception,
                                 physics=env.options.physics)
    evaluation.run_episode(platform, ResidualController(Hold(), policy), 3, env.goal, env.initial, seconds=0.1)
    assert np.array_equal(platform.robot_state().position, trained[1])
    assert np.array_equal(platform.true_cube_pose().position, trained[0].position)
    assert ResidualController(Hold(), policy).name == "hold+rpl"


def test_save_and_load_give_identical_actions(tmp_path):
    policy = random_policy(seed=2)
    path = str(tmp_path / "policy.pt")
    save_policy(path, policy.actor, dict(policy.metadata, training={"steps": 7}))
    loaded = read_policy(path)
    inputs = np.random.default_rng(0).normal(size=(64, INPUT_DIM)).astype(np.float32)
    assert np.array_equal(policy.action(inputs), loaded.action(inputs))
    with torch.no_grad():   # the deterministic action of SB3's actor: tanh of the Gaussian mean
        sb3 = policy.actor(torch.as_tensor(inputs), deterministic=True).numpy()
    assert type(loaded.actor).__name__ == "ResidualActor"    # read without SB3
    assert np.allclose(loaded.action(inputs), sb3, atol=1e-6)
    assert np.any(np.abs(loaded.action(inputs)) > 0.1)
    meta = loaded.metadata
    assert (meta["base_controller"], meta["grasp"], meta["residual_scale"], meta["training"]["steps"]) == \
        ("hold", "tg", RESIDUAL_SCALE, 7)
    assert meta["observation_layout"] == rpl_policy.OBSERVATION_LAYOUT_VERSION
    controller = load_policy(path, Hold())
    assert isinstance(controller, ResidualController) and controller.rate_hz == 200.0
    obs = SimulatedPlatform().reset(*task.sample_episode(3, np.random.default_rng(1))[::-1])
    controller.reset(obs)
    expected = policy.residual(obs, Hold().compute(obs), KIN)
    controller.compute(obs)
    assert np.array_equal(controller.last_residual, expected)
    assert np.array_equal(expected, RESIDUAL_SCALE * policy.action(policy_input(obs, Hold().compute(obs), KIN)))


class _Payload:
    """Unpickling this object would create the marker file: a policy file must never do that."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _error(path, controller=None, kind=PolicyFileError):
    with pytest.raises(kind) as info:
        load_policy(str(path), controller or Hold())
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_policy_files_are_refused_without_running_code(tmp_path):
    assert "not found" in _error(tmp_path / "missing.pt", kind=FileNotFoundError)
    junk = tmp_path / "junk.pt"
    for data in (b"not a policy\n" * 20, bytes(range(256))):
        junk.write_bytes(data)
        assert str(junk) in _error(junk)

    good = tmp_path / "good.pt"
    policy = random_policy()
    save_policy(str(good), policy.actor, policy.metadata)
    payload = torch.load(str(good), weights_only=True)
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save(dict(payload, metadata=dict(payload["metadata"], note=_Payload(str(marker)))), str(evil))
    assert "refused" in _error(evil)
    assert not marker.exists()
    raw = tmp_path / "evil.pkl"                     # a raw pickle, not a torch zip
    with open(raw, "wb") as stream:
        pickle.dump({"format": rpl_policy.FORMAT, "note": _Payload(str(marker))}, stream, protocol=4)
    assert "safe loader stopped" in _error(raw)
    assert not marker.exists()
    torch.load(str(evil), weights_only=False)       # the payload is live: plain unpickling runs it
    assert marker.exists()

    def variant(name, **changes):
        path = tmp_path / name
        torch.save(dict(payload, **changes), str(path))
        return path

    meta = payload["metadata"]
    assert rpl_policy.FORMAT in _error(variant("format.pt", format="something/else"))
    assert "version" in _error(variant("version.pt", version=99))
    assert "observation_layout" in _error(variant("layout.pt", metadata=dict(meta, observation_layout=0)))
    assert "lacks" in _error(variant("meta.pt", metadata={k: v for k, v in meta.items() if k != "grasp"}))
    assert "size mismatch" in _error(variant("size.pt", metadata=dict(meta, embedding_size=32)))
    nan = {k: torch.full_like(v, float("nan")) for k, v in payload["state_dict"].items()}
    assert "non-finite" in _error(variant("nan.pt", state_dict=nan))

    class Other(Hold):
        name = "mp"
        rate_hz = 500.0

    assert "trained on base controller 'hold', not 'mp'" in _error(good, Other())
    with pytest.raises(ValueError, match="grasp"):
        load_policy(str(good), Hold(), grasp="cg")


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    """A policy from a tiny SAC run on MP-PG (a few hundred RL steps)."""
    out = str(tmp_path_factory.mktemp("rpl") / "mp.pt")
    config = rpl_training.SACConfig(learning_starts=100, batch_size=32, buffer_size=1000)
    result = rpl_training.train("mp", None, 3, 250, seed=0, out=out, episode_seconds=0.3, eval_every=200,
                            eval_trials=1, eval_seconds=0.2, config=config, progress=False)
    return out, result


def test_tiny_training_run_writes_a_loadable_policy(tiny_policy):
    out, result = tiny_policy
    assert [p["step"] for p in result.learning_curve] == [0, 200, 250]
    assert result.episodes and result.throughput["rl_steps_per_second"] > 0
    assert result.config["physics_steps_per_rl_step"] == 2          # MP at 500 Hz
    json.dumps(result.to_dict(), allow_nan=False)
    policy = read_policy(out)
    assert (policy.base_controller, policy.metadata["grasp"], policy.metadata["rate_hz"]) == ("mp", "pg", 500.0)
    assert policy.metadata["training"]["steps"] == 250
    from trifinger_controllers.controllers import make_controller
    controller = load_policy(out, make_controller("mp", "pg", None, KIN, level=3))
    assert controller.name == "mp+rpl"
    with pytest.raises(ValueError):
        load_policy(out, Hold())


def test_evaluate_with_residual(tiny_policy, tmp_path):
    out, _ = tiny_policy
    result_file = tmp_path / "eval.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, "evaluate"), "--controller", "mp", "--grasp", "pg",
         "--level", "3", "--trials", "1", "--seconds", "1", "--rpl-policy", out, "--json", str(result_file),
         "--quiet"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(result_file.read_text())
    assert result["controller"] == "mp+rpl" and result["residual"] == out
    assert result["label"] == "simulation" and len(result["trials"]) == 1
    bad = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, "evaluate"), "--controller", "cpc", "--grasp", "tg",
         "--level", "3", "--trials", "1", "--seconds", "1", "--residual", out, "--json", str(result_file)],
        capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "trained on base controller 'mp'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_compare_only_reruns_the_comparison_and_keeps_the_training(tiny_policy, tmp_path):
    """After a change to the base controller: the trained policy compared again, the learning
    curve of its training kept."""
    out, result = tiny_policy
    result_file = tmp_path / "rpl.json"
    result_file.write_text(json.dumps({"label": "simulation", **result.to_dict()}))
    script = os.path.join(SCRIPTS, "train-rpl")
    args = [sys.executable, script, "--controller", "mp", "--compare-only", "--compare-trials", "1",
            "--compare-seconds", "0.5", "--compare-seed", "3", "--out", out, "--quiet"]
    proc = subprocess.run(args + ["--json", str(result_file)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    rerun = json.loads(result_file.read_text())
    assert rerun["learning_curve"] == json.loads(json.dumps(result.to_dict()))["learning_curve"]
    assert [row["policy"] for row in rerun["comparison"]["table"]] == ["MP-PG", "MP-PG w RPL"]
    assert rerun["comparison"]["base"]["seed"] == 3 and "--compare-only" in rerun["comparison_command"]
    for extra, message in (([], "needs the training run's existing --json"),
                           (["--json", str(tmp_path / "missing.json")], "needs the training run's existing --json")):
        bad = subprocess.run(args + extra, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    (tmp_path / "other.json").write_text("[1, 2]")
    bad = subprocess.run(args + ["--json", str(tmp_path / "other.json")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a train-rpl result" in bad.stderr, bad.stderr


@pytest.mark.parametrize("name", ["train-rpl", "train-residual"])   # train-residual: the old name
def test_train_rpl_bad_input(tmp_path, name):
    script = os.path.join(SCRIPTS, name)
    (tmp_path / "a_file").write_text("a file, not a folder")
    for args, message in ((["--controller", "xx"], "invalid choice"),
                          (["--controller", "mp", "--steps", "0"], "--steps must be >= 1"),
                          (["--controller", "mp", "--steps", "10", "--out", str(tmp_path / "a_file" / "p.pt")],
                           "--out: cannot create its folder")):
        proc = subprocess.run([sys.executable, script, *args, "--out", str(tmp_path / "p.pt"),
                               "--json", str(tmp_path / "o.json")] if "--out" not in args else
                              [sys.executable, script, *args, "--json", str(tmp_path / "o.json")],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("train-rpl: error: ")


def test_runtime_module_needs_neither_gymnasium_nor_sb3():
    """What the controller nodes import to run a policy (rpl_policy) pulls no training library
    into the control loop."""
    code = ("import sys; import trifinger_controllers.rpl_policy, trifinger_controllers.controller_node; "
            "print(sorted(m for m in ('gymnasium', 'gym', 'stable_baselines3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
