"""Speed of diffnea_ros's differentiable dynamics against its peers (issue 4, "Benchmarks").

Candidates, on the same URDF (pybullet_data's KUKA iiwa, and its Panda when the peer loads it):

1. ours:   diffnea_ros.algorithms.rnea (batch-first, vectorised over the batch), float32 and
           float64; forward+backward of the ID loss through LearnableDynamics (SPD, paper 002
           eq. 5-6) with the seven arm links learnable (mass, com and inertia).
2. peer:   differentiable-robot-model 0.2.3 (Facebook's implementation of paper 002), float32
           (it cannot run in float64: recorded as a note), installed for the benchmark only into
           build/peers by tools/install_bench_peers.sh. Learnable variant: the same seven links'
           mass (PositiveScalar), com (UnconstrainedTensor) and inertia
           (SymmPosDef3DInertiaMatrixNet, its SPD parametrisation).
3. pin:    Pinocchio's pin.rnea, one sample per call from Python (float64).

Figures: inverse-dynamics samples/s at batch 1, 256 and 4096; Pinocchio's single-call rate and
us per call; the time of one forward+backward of the ID loss (paper 002 eq. 2, MSE between
predicted and target torques) at batch 256. Each case is calibrated to run for at least
``min_seconds`` per repeat after a warm-up; repeats are interleaved over the cases (so the noise
of the shared machine spreads over all of them) and each figure is the median with p10/p90 over
repeats. Ratios are ratios of medians. torch runs on one thread. Before timing, every
candidate's torques are compared with Pinocchio's on the same random states (a fast wrong answer
would not count).

    python bench/diffnea_dynamics.py --out bench/results/diffnea_dynamics.json [--quick]
"""
from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pinocchio as pin
import pybullet_data
import torch

from diffnea_ros import LearnableDynamics, RigidBodyModel, rnea
from sim2real_checks import provenance, write_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_DIR = os.path.join(ROOT, "build", "peers")
PEER_MISSING = "peer not installed: run tools/install_bench_peers.sh"
RESULT = os.path.join(ROOT, "bench", "results", "diffnea_dynamics.json")
ROBOTS = {"kuka_iiwa": "kuka_iiwa/model.urdf", "panda": "franka_panda/panda.urdf"}
BATCHES = (1, 256, 4096)
LOSS_BATCH = 256
LEARNABLE_LINKS = 7          # the links moved by the first seven joints (the arm)
TARGETS = {"peer_over_ours_forward_backward": 50.0,
           "ours_batch4096_over_pinocchio_single_call": 1.0}
CORRECTNESS_STATES = 64


# --------------------------------------------------------------------------------------- timing
@dataclass
class Case:
    """One timed call: ``fn()`` processes ``batch`` samples."""

    fn: Callable[[], object]
    batch: int
    calls: int = 1           # calls per repeat, set by calibration


def _calibrate(case: Case, min_seconds: float, warmup_calls: int) -> None:
    for _ in range(warmup_calls):
        case.fn()
    start = time.perf_counter()
    case.fn()
    once = max(time.perf_counter() - start, 1e-7)
    case.calls = max(1, int(np.ceil(min_seconds / once)))


def _time_once(case: Case) -> float:
    """Seconds per call, averaged over ``case.calls`` calls."""
    fn = case.fn
    start = time.perf_counter()
    for _ in range(case.calls):
        fn()
    return (time.perf_counter() - start) / case.calls


def _stats(seconds: list[float], batch: int, calls: int) -> dict:
    s = np.asarray(seconds)
    p10, median, p90 = (float(np.percentile(s, p)) for p in (10, 50, 90))
    return {"batch": batch, "ms_per_call_median": median * 1e3, "ms_per_call_p10": p10 * 1e3,
            "ms_per_call_p90": p90 * 1e3, "samples_per_s_median": batch / median,
            "samples_per_s_p10": batch / p90, "samples_per_s_p90": batch / p10,
            "calls_per_repeat": calls, "repeats": len(seconds)}


def run_cases(cases: dict[str, Case], repeats: int, min_seconds: float,
              warmup_calls: int) -> dict[str, dict]:
    """Calibrate, then time every case once per repeat, interleaved; figures per case."""
    for case in cases.values():
        _calibrate(case, min_seconds, warmup_calls)
    seconds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            seconds[name].append(_time_once(case))
    return {name: _stats(seconds[name], case.batch, case.calls) for name, case in cases.items()}


# --------------------------------------------------------------------------------------- states
@dataclass
class States:
    """Random joint states (float64 NumPy) within the joint limits, plus target torques."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray

    def torch(self, n: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        return tuple(torch.as_tensor(x[:n], dtype=dtype) for x in (self.q, self.qd, self.qdd))


def random_states(pin_model: pin.Model, n: int, seed: int = 0) -> States:
    rng = np.random.default_rng(seed)
    lower, upper = pin_model.lowerPositionLimit, pin_model.upperPositionLimit
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    nv = pin_model.nv
    return States(q=rng.uniform(lower, upper, (n, nv)), qd=rng.uniform(-1.5, 1.5, (n, nv)),
                  qdd=rng.uniform(-3.0, 3.0, (n, nv)))


def pinocchio_torques(pin_model: pin.Model, states: States, n: int,
                      damping: Optional[np.ndarray] = None) -> np.ndarray:
    data = pin_model.createData()
    tau = np.stack([pin.rnea(pin_model, data, states.q[i], states.qd[i], states.qdd[i]).copy()
                    for i in range(n)])
    return tau if damping is None else tau + damping * states.qd[:n]


# ------------------------------------------------------------------------------------------ ours
def _learnable_ours(model: RigidBodyModel, links: list[str]) -> torch.nn.Module:
    """Our learnable dynamics with ``links`` parametrised by SPD (eq. 5-6): mass, com and
    inertia of the learnable links, as the peer's; damping not learned (the peer has none)."""
    return LearnableDynamics(model, "spd", learnable_links=links, learn_damping=False)


LEARN_NOTE = ("LearnableDynamics(model, 'spd', learnable_links, learn_damping=False): mass, com "
              "and inertia of the learnable links, as the peer's. 'rnea': autograd through the "
              "differentiable RNEA; 'regressor': tau = Y(q, qd, qdd) pi(theta) with Y computed "
              "once per data set (exact, what `identify` trains with); its one-off cost is "
              "'regressor_build'")


def _loss_step(module: torch.nn.Module, forward: Callable[[], torch.Tensor],
               target: torch.Tensor) -> Callable[[], None]:
    """One forward+backward of the ID loss L_ID (paper 002 eq. 2, the MSE of the torques)."""
    params = [p for p in module.parameters() if p.requires_grad]

    def step() -> None:
        for p in params:
            p.grad = None
        loss = torch.nn.functional.mse_loss(forward(), target)
        loss.backward()
    return step


# ------------------------------------------------------------------------------------------ peer
def import_peer():
    """The peer package from build/peers, or None when it is not installed."""
    if os.path.isdir(PEER_DIR) and PEER_DIR not in sys.path:
        sys.path.append(PEER_DIR)
    try:
        peer = importlib.import_module("differentiable_robot_model")
        core = importlib.import_module("urdf_parser_py.xml_reflection.core")
    except ImportError:
        return None
    core.on_error = lambda message: None     # silence "Unknown tag" lines of urdf_parser_py
    return peer


def peer_learnable(peer, urdf: str, links: list[str]) -> torch.nn.Module:
    """The peer with mass, com and inertia of ``links`` learnable (its SPD parametrisation)."""
    params = importlib.import_module("differentiable_robot_model.rigid_body_params")
    robot = peer.DifferentiableRobotModel(urdf, device="cpu")
    for link in links:
        inertia = robot._bodies[robot._name_to_idx_map[link]].inertia
        mass, com, inertia_mat = (x.detach().clone() for x in inertia._get_parameter_values())
        robot.make_link_param_learnable(link, "mass", params.PositiveScalar(init_param=mass))
        robot.make_link_param_learnable(link, "com", params.UnconstrainedTensor(
            dim1=1, dim2=3, init_tensor=com.reshape(1, 3)))
        robot.make_link_param_learnable(link, "inertia_mat", params.SymmPosDef3DInertiaMatrixNet(
            bias=1e-7, init_param=inertia_mat))
    return robot


def peer_known_failures(peer, urdf: str) -> dict:
    """What happens in float64 and with its triangular (Tri) parametrisation."""
    notes = {}
    robot = peer.DifferentiableRobotModel(urdf, device="cpu")
    x = torch.zeros(2, robot._n_dofs, dtype=torch.float64)
    attempts = {"float64_inputs": lambda: robot.compute_inverse_dynamics(x, x, x),
                "float64_model_double": lambda: robot.double().compute_inverse_dynamics(x, x, x)}
    for name, attempt in attempts.items():
        try:
            notes[name] = f"works, output {attempt().dtype}"
        except Exception as error:                          # noqa: BLE001 - recorded
            notes[name] = f"fails: {type(error).__name__}: {str(error).splitlines()[0]}"
    params = importlib.import_module("differentiable_robot_model.rigid_body_params")
    tri = {"tri_with_init": lambda: params.TriangParam3DInertiaMatrixNet(
               bias=1e-7, init_param=0.1 * torch.eye(3).unsqueeze(0)),
           "tri_random_init": lambda: params.TriangParam3DInertiaMatrixNet(bias=1e-7)}
    for name, attempt in tri.items():
        try:
            attempt()
            notes[name] = "constructs"
        except Exception as error:                          # noqa: BLE001 - recorded
            notes[name] = f"fails: {type(error).__name__}: {str(error).splitlines()[0]}"
    return notes


# ----------------------------------------------------------------------------------- per robot
def bench_robot(name: str, rel_urdf: str, peer, repeats: int, min_seconds: float,
                warmup_calls: int) -> dict:
    urdf = os.path.join(pybullet_data.getDataPath(), rel_urdf)
    pin_model = pin.buildModelFromUrdf(urdf)
    ours = {dtype: RigidBodyModel.from_urdf(urdf, dtype=dtype)
            for dtype in (torch.float32, torch.float64)}
    model64 = ours[torch.float64]
    dof = model64.dof
    pin_names = tuple(pin_model.names[1:])
    if pin_names != model64.joint_names:
        raise RuntimeError(f"{name}: joint order differs from Pinocchio's ({pin_names})")
    n = max(BATCHES)
    states = random_states(pin_model, n)
    damping = model64.nominal_damping.numpy()
    arm_links = [model64.body_names[b] for b in model64.description.joint_body[:LEARNABLE_LINKS]]
    result: dict = {"urdf": f"pybullet_data/{rel_urdf}", "dof": dof,
                    "joint_names": list(model64.joint_names), "learnable_links": arm_links,
                    "joint_damping": damping.tolist()}

    # correctness against Pinocchio, without damping (pin.rnea has none)
    k = CORRECTNESS_STATES
    reference = pinocchio_torques(pin_model, states, k)
    deviation: dict = {}
    with torch.no_grad():
        for dtype, model in ours.items():
            tau = rnea(model, *states.torch(k, dtype), damping=torch.zeros(dof, dtype=dtype))
            deviation[f"ours_{str(dtype)[6:]}"] = float(np.abs(tau.double().numpy() - reference).max())
        if peer is not None:
            robot = peer.DifferentiableRobotModel(urdf, device="cpu")
            tau = robot.compute_inverse_dynamics(*states.torch(k, torch.float32),
                                                 include_gravity=True, use_damping=False)
            error = np.abs(tau.double().numpy() - reference)
            deviation["peer_float32"] = float(error.max())
            deviation["peer_float32_per_joint"] = error.max(axis=0).tolist()
            prismatic = [i for i, b in enumerate(model64.description.joint_body)
                         if model64.joint_types[b] == "prismatic"]
            if prismatic:     # the peer turns every joint about its axis: check without them
                rest = States(*(x[:k].copy() for x in (states.q, states.qd, states.qdd)))
                for x in (rest.q, rest.qd, rest.qdd):
                    x[:, prismatic] = 0.0
                tau = robot.compute_inverse_dynamics(*rest.torch(k, torch.float32),
                                                     include_gravity=True, use_damping=False)
                others = [i for i in range(dof) if i not in prismatic]
                error = np.abs(tau.double().numpy() - pinocchio_torques(pin_model, rest, k))
                deviation["peer_float32_other_joints_with_prismatic_at_rest"] = float(
                    error[:, others].max())
                deviation["peer_note"] = ("the peer rotates every movable joint about its axis, "
                                          "prismatic ones included (joints "
                                          f"{[model64.joint_names[i] for i in prismatic]})")
    deviation["torque_scale_max_abs"] = float(np.abs(reference).max())
    deviation["states"] = k
    result["max_abs_torque_deviation_from_pinocchio_nm"] = deviation

    # inverse dynamics throughput (no autograd graph), damping as in the URDF for both
    cases: dict[str, Case] = {}
    for dtype, model in ours.items():
        for b in BATCHES:
            q, qd, qdd = states.torch(b, dtype)
            cases[f"ours_{str(dtype)[6:]}/{b}"] = Case(
                lambda m=model, q=q, qd=qd, qdd=qdd: rnea(m, q, qd, qdd), b)
    if peer is not None:
        robot = peer.DifferentiableRobotModel(urdf, device="cpu")
        for b in BATCHES:
            q, qd, qdd = states.torch(b, torch.float32)
            cases[f"peer_float32/{b}"] = Case(
                lambda q=q, qd=qd, qdd=qdd: robot.compute_inverse_dynamics(
                    q, qd, qdd, include_gravity=True), b)
    data = pin_model.createData()
    single = [tuple(np.ascontiguousarray(x[i]) for x in (states.q, states.qd, states.qdd))
              for i in range(1000)]

    def pin_calls() -> None:
        for q, qd, qdd in single:
            pin.rnea(pin_model, data, q, qd, qdd)
    cases["pinocchio"] = Case(pin_calls, len(single))

    # forward+backward of the ID loss at LOSS_BATCH, targets: perturbed true torques
    targets = pinocchio_torques(pin_model, states, LOSS_BATCH, damping)
    targets = targets * (1.0 + 0.1 * np.random.default_rng(1).standard_normal(targets.shape))
    learn_notes = {"ours": LEARN_NOTE}
    for dtype, model in ours.items():
        module = _learnable_ours(model, arm_links)
        q, qd, qdd = states.torch(LOSS_BATCH, dtype)
        target = torch.as_tensor(targets, dtype=dtype)
        name = str(dtype)[6:]
        cases[f"ours_{name}/loss"] = Case(_loss_step(
            module, lambda m=module, q=q, qd=qd, qdd=qdd: m(q, qd, qdd), target), LOSS_BATCH)
        cache = module.regressor_cache(q, qd, qdd)
        cases[f"ours_{name}_regressor/loss"] = Case(_loss_step(
            module, lambda m=module, c=cache, qd=qd: m.predict_from_regressor(c.y, c.fixed, qd),
            target), LOSS_BATCH)
        cases[f"ours_{name}_regressor_build/loss"] = Case(
            lambda m=module, q=q, qd=qd, qdd=qdd: m.regressor_cache(q, qd, qdd), LOSS_BATCH)
    if peer is not None:
        learner = peer_learnable(peer, urdf, arm_links)
        learn_notes["peer"] = ("DifferentiableRobotModel with mass PositiveScalar, com "
                               "UnconstrainedTensor, inertia_mat SymmPosDef3DInertiaMatrixNet "
                               "on the learnable links")
        result["peer_learnable_parameters"] = sum(p.numel() for p in learner.parameters())
        q, qd, qdd = states.torch(LOSS_BATCH, torch.float32)
        cases["peer_float32/loss"] = Case(_loss_step(
            learner, lambda: learner.compute_inverse_dynamics(q, qd, qdd, include_gravity=True),
            torch.as_tensor(targets, dtype=torch.float32)), LOSS_BATCH)

    with torch.no_grad():
        no_grad_cases = {k: v for k, v in cases.items() if not k.endswith("/loss")}
        figures = run_cases(no_grad_cases, repeats, min_seconds, warmup_calls)
    figures.update(run_cases({k: v for k, v in cases.items() if k.endswith("/loss")},
                             repeats, min_seconds, warmup_calls))

    inverse_dynamics: dict = {}
    for key, stats in figures.items():
        candidate, what = key.split("/") if "/" in key else (key, "")
        if what.isdigit():
            inverse_dynamics.setdefault(candidate, {})[what] = stats
    result["inverse_dynamics"] = inverse_dynamics
    p = figures["pinocchio"]
    result["pinocchio_single_call"] = {
        "us_per_call_median": p["ms_per_call_median"] / p["batch"] * 1e3,
        "us_per_call_p10": p["ms_per_call_p10"] / p["batch"] * 1e3,
        "us_per_call_p90": p["ms_per_call_p90"] / p["batch"] * 1e3,
        "samples_per_s_median": p["samples_per_s_median"],
        "samples_per_s_p10": p["samples_per_s_p10"], "samples_per_s_p90": p["samples_per_s_p90"],
        "calls_per_timing": p["batch"], "repeats": p["repeats"]}
    result["id_loss_forward_backward"] = {
        "batch": LOSS_BATCH, "what": learn_notes,
        **{key.split("/")[0]: stats for key, stats in figures.items() if key.endswith("/loss")}}

    pin_rate = p["samples_per_s_median"]
    ratios = {f"ours_{d}_batch4096_over_pinocchio_single_call":
              inverse_dynamics[f"ours_{d}"]["4096"]["samples_per_s_median"] / pin_rate
              for d in ("float32", "float64")}
    if peer is not None:
        fb = result["id_loss_forward_backward"]
        ratios["peer_over_ours_forward_backward_float32"] = (
            fb["peer_float32"]["ms_per_call_median"] / fb["ours_float32"]["ms_per_call_median"])
        ratios["peer_over_ours_regressor_forward_backward_float32"] = (
            fb["peer_float32"]["ms_per_call_median"]
            / fb["ours_float32_regressor"]["ms_per_call_median"])
        ratios["peer_over_ours_regressor_forward_backward_with_build_float32"] = (
            fb["peer_float32"]["ms_per_call_median"]
            / (fb["ours_float32_regressor"]["ms_per_call_median"]
               + fb["ours_float32_regressor_build"]["ms_per_call_median"]))
        for b in BATCHES:
            ratios[f"ours_float32_over_peer_id_samples_per_s_batch{b}"] = (
                inverse_dynamics["ours_float32"][str(b)]["samples_per_s_median"]
                / inverse_dynamics["peer_float32"][str(b)]["samples_per_s_median"])
    result["ratios_of_medians"] = ratios
    return result


def _versions(peer) -> dict:
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "numpy": np.__version__, "pinocchio": pin.__version__}
    if peer is not None:
        from importlib.metadata import PathDistribution
        from pathlib import Path
        info = Path(PEER_DIR) / "differentiable_robot_model-0.2.3.dist-info"
        versions["differentiable_robot_model"] = (PathDistribution(info).version
                                                  if info.is_dir() else "unknown")
    return versions


def bench_diffnea_dynamics(quick: bool = False, robots: Optional[list[str]] = None) -> dict:
    """All figures (see the module docstring); returns what is written to the JSON file."""
    repeats, min_seconds, warmup_calls = (3, 0.05, 2) if quick else (15, 0.25, 5)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        peer = import_peer()
        peer_info: dict = {"installed": peer is not None, "dtype": "float32",
                           "path": os.path.relpath(PEER_DIR, ROOT)}
        if peer is None:
            peer_info["note"] = PEER_MISSING
        else:
            peer_info["known_failures"] = peer_known_failures(
                peer, os.path.join(pybullet_data.getDataPath(), ROBOTS["kuka_iiwa"]))
        results = {}
        for name in robots or list(ROBOTS):
            results[name] = bench_robot(name, ROBOTS[name], peer, repeats, min_seconds,
                                        warmup_calls)
        main = results.get("kuka_iiwa") or next(iter(results.values()))
        r = main["ratios_of_medians"]
        passes = {"ours_float32_batch4096_over_pinocchio_single_call":
                  bool(r["ours_float32_batch4096_over_pinocchio_single_call"] >= 1.0),
                  "ours_float64_batch4096_over_pinocchio_single_call":
                  bool(r["ours_float64_batch4096_over_pinocchio_single_call"] >= 1.0)}
        if peer is not None:
            for key in ("peer_over_ours_forward_backward_float32",
                        "peer_over_ours_regressor_forward_backward_float32"):
                passes[key] = bool(r[key] >= 50.0)
        return {
            "benchmark": "diffnea_dynamics",
            "what": "inverse dynamics throughput and ID-loss forward+backward time of "
                    "diffnea_ros vs differentiable-robot-model (float32) and Pinocchio "
                    "(single call from Python)",
            "quick": quick, "repeats": repeats, "min_seconds_per_repeat": min_seconds,
            "warmup_calls": warmup_calls,
            "figures_from": "median and p10/p90 over repeats interleaved across candidates; "
                            "ratios are ratios of medians; peer inputs float32",
            "batches": list(BATCHES), "loss_batch": LOSS_BATCH,
            "torch_num_threads": torch.get_num_threads(),
            "torch_num_threads_default": threads_before,
            "peer": peer_info, "targets": TARGETS,
            "passes_on": "kuka_iiwa" if "kuka_iiwa" in results else next(iter(results)),
            "passes": passes, "robots": results, "versions": _versions(peer),
            "machine": {"platform": platform.platform(), "machine": platform.machine(),
                        "cpus": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
                        "note": "2 cores shared with other jobs: figures are noisy; compare "
                                "candidates measured in the same run"},
        }
    finally:
        torch.set_num_threads(threads_before)


def print_table(result: dict) -> None:
    for name, r in result["robots"].items():
        print(f"{name} ({r['dof']} dof), torch threads {result['torch_num_threads']}")
        print(f"  {'inverse dynamics, samples/s':30s}" + "".join(f"{'b=' + str(b):>14s}" for b in BATCHES))
        for candidate, per_batch in r["inverse_dynamics"].items():
            print(f"  {candidate:30s}" + "".join(
                f"{per_batch[str(b)]['samples_per_s_median']:14.4g}" for b in BATCHES))
        p = r["pinocchio_single_call"]
        print(f"  {'pinocchio single call':30s}{p['samples_per_s_median']:14.4g} samples/s, "
              f"{p['us_per_call_median']:.2f} us/call")
        for candidate, stats in r["id_loss_forward_backward"].items():
            if isinstance(stats, dict) and "ms_per_call_median" in stats:
                print(f"  {'ID loss fwd+bwd b=256 ' + candidate:30s}{stats['ms_per_call_median']:14.3f} ms "
                      f"(p10 {stats['ms_per_call_p10']:.3f}, p90 {stats['ms_per_call_p90']:.3f})")
        for key, value in r["ratios_of_medians"].items():
            print(f"  {key:62s}{value:10.2f}")
        d = r["max_abs_torque_deviation_from_pinocchio_nm"]
        print("  max |tau - pin| [Nm]: " + ", ".join(
            f"{k} {v:.2g}" for k, v in d.items() if isinstance(v, float)))
    if not result["peer"]["installed"]:
        print(result["peer"]["note"])
    print(f"targets {result['targets']} -> {result['passes']} ({result['passes_on']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=RESULT, help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="few repeats (smoke run)")
    parser.add_argument("--robot", action="append", choices=list(ROBOTS),
                        help="robot to bench (repeatable; default: all)")
    args = parser.parse_args()
    result = bench_diffnea_dynamics(args.quick, args.robot)
    write_json(args.out, {**result, **provenance("bench/diffnea_dynamics.py")})
    print_table(result)


if __name__ == "__main__":
    main()
