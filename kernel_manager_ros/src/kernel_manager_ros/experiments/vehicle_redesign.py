"""The redesign stages of the delivery-vehicle experiment (paper 001 §5): the program redesigned
by SARSA in the kernel-modified simulation and redeployed, over several learner seeds, and
:func:`predict_programs` (how well the kernel simulation predicts a program's deployed ATR).
"Deployment" is our vehicle simulation with an unexpected ramp, not a real robot.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from kernel_manager_ros.kernel import KernelSet
from kernel_manager_ros.state_spec import StateSpec
from kernel_manager_ros.vehicle.sarsa import SarsaSpeedPolicy
from kernel_manager_ros.vehicle.run import RunResult, run_missions
from kernel_manager_ros.experiments.vehicle_stages import Context, KernelHook, relative_gap

# the prediction experiment's seed offsets: no other stage (nor the redesign) uses them
PREDICTION_SIM_SEED, PREDICTION_DEPLOY_SEED = 7, 8


def sarsa_redesign(ctx: Context, kernel_set: KernelSet, spec: StateSpec) -> dict[str, Any]:
    """Paper 001 §4's redesign: SARSA over a pitch-dependent speed factor (vehicle/sarsa.py),
    trained on ``sarsa_episodes`` missions of the original program in the kernel-modified
    simulation; the greedy rule then runs there and in the deployment on the seeds of the grid
    search's evaluation and redeploy (4, 5)."""
    cfg, mission = ctx.config, ctx.mission
    learner, training = _train_sarsa(ctx, kernel_set, spec, ctx.seed(9), ctx.seed(10))
    policy = learner.greedy()
    ctx.runs["redesign_sarsa_kernels"] = run_missions(
        ctx.design, mission, spec, cfg.missions, seed=ctx.seed(4),
        hook=KernelHook(kernel_set, spec, mission.period), speed_policy=policy,
        label="Redesign/K (SARSA)")
    ctx.runs["redeploy_sarsa"] = run_missions(ctx.deploy, mission, ctx.spec, cfg.missions,
                                              seed=ctx.seed(5), speed_policy=policy,
                                              label="Redeploy (SARSA)")
    atr_design = float(ctx.runs["design"].atr[-1])
    atr_redeploy = float(ctx.runs["redeploy_sarsa"].atr[-1])
    return {"method": "tabular SARSA in the kernel-modified simulation: state = bin of the "
                      "program's |pitch|, action = factor on the commanded speed, reward = "
                      "perf(t) per control step, gamma 1, epsilon-greedy (vehicle/sarsa.py)",
            "episodes": cfg.sarsa_episodes, "learner": learner.to_dict(),
            "training_atr": float(training.atr[-1]),
            "training_atr_last_quarter": float(np.mean(
                training.totals[-max(1, cfg.sarsa_episodes // 4):])),
            "greedy": policy.to_dict(),
            "atr_redesign_kernels": float(ctx.runs["redesign_sarsa_kernels"].atr[-1]),
            "atr_redeploy": atr_redeploy,
            "redeploy_within_design": relative_gap(atr_redeploy, atr_design),
            "policy": policy}


def _train_sarsa(ctx: Context, kernel_set: KernelSet, spec: StateSpec, learner_seed: int,
                 mission_seed: int) -> tuple[SarsaSpeedPolicy, RunResult]:
    """One SARSA training (vehicle/sarsa.py): ``sarsa_episodes`` missions of the original program
    in the kernel-modified simulation; the learner and the training run."""
    cfg, mission = ctx.config, ctx.mission
    learner = SarsaSpeedPolicy(cfg.sarsa_edges, cfg.sarsa_factors, alpha=cfg.sarsa_alpha,
                               epsilon=cfg.sarsa_epsilon, rng=np.random.default_rng(learner_seed))
    training = run_missions(ctx.design, mission, spec, cfg.sarsa_episodes, seed=mission_seed,
                            hook=KernelHook(kernel_set, spec, mission.period),
                            speed_policy=learner, label="SARSA training")
    return learner, training


# offsets of the repeated SARSA trainings' seeds: learner 300 + 2k, missions 301 + 2k (the
# generation rounds use 100 + r and 200 + r)
SARSA_REPEAT_SEED = 300


def sarsa_over_seeds(ctx: Context, kernel_set: KernelSet, spec: StateSpec,
                     first: Mapping[str, Any]) -> dict[str, Any]:
    """How stable SARSA's redesign is over seeds: ``sarsa_repeats`` further trainings with their
    own learner and mission seeds; each greedy rule runs in the kernel simulation and in the
    deployment on the prediction experiment's seeds (7, 8: no training or search used them), as
    the first training's rule did there (``first``, its row of the prediction experiment)."""
    cfg, mission = ctx.config, ctx.mission
    atr_design = float(ctx.runs["design"].atr[-1])
    rows = [{"training": 0, "learner_seed": ctx.seed(9), "mission_seed": ctx.seed(10),
             "greedy": first["speed_rule"], "training_atr": first["training_atr"],
             "atr_kernels": first["atr_kernels"],
             "atr_deploy": first["atr_deploy"]}]
    for k in range(1, cfg.sarsa_repeats + 1):
        seeds = ctx.seed(SARSA_REPEAT_SEED + 2 * k), ctx.seed(SARSA_REPEAT_SEED + 2 * k + 1)
        learner, training = _train_sarsa(ctx, kernel_set, spec, *seeds)
        policy = learner.greedy()
        kernels = run_missions(ctx.design, mission, spec, cfg.missions,
                               seed=ctx.seed(PREDICTION_SIM_SEED),
                               hook=KernelHook(kernel_set, spec, mission.period),
                               speed_policy=policy)
        deploy = run_missions(ctx.deploy, mission, ctx.spec, cfg.missions,
                              seed=ctx.seed(PREDICTION_DEPLOY_SEED), speed_policy=policy)
        rows.append({"training": k, "learner_seed": seeds[0], "mission_seed": seeds[1],
                     "greedy": policy.to_dict(), "training_atr": float(training.atr[-1]),
                     "atr_kernels": float(kernels.atr[-1]), "atr_deploy": float(deploy.atr[-1])})
    for row in rows:
        row["deploy_within_design"] = relative_gap(row["atr_deploy"], atr_design)
    return {"trainings": rows,
            "within_10_percent": sum(1 for r in rows if r["deploy_within_design"] <= 0.10),
            "atr_deploy_mean": float(np.mean([r["atr_deploy"] for r in rows])),
            "atr_deploy_min": float(np.min([r["atr_deploy"] for r in rows]))}


def predict_programs(ctx: Context, programs: Mapping[str, Mapping[str, float]],
                     simulations: Mapping[str, Optional[KernelSet]], spec: StateSpec,
                     policies: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Stage e2: does a simulation predict what a program does in the deployment? Each program
    (parameters of ``mission.with_program``) runs in each simulation (the design simulation with
    the kernel set as ``KernelHook``, None: the plain design simulation) on one fresh seed and
    in the deployment on another; error = ATR(simulation) - ATR(deployment). ``policies``: a
    learned speed rule per program name (``TableSpeedPolicy``), applied on top of its params."""
    cfg, mission = ctx.config, ctx.mission
    policies = policies or {}
    rows: dict[str, dict[str, Any]] = {}
    for name, params in programs.items():
        program = mission.with_program(**params)
        policy = policies.get(name)
        row: dict[str, Any] = {"params": dict(params)}
        if policy is not None:
            row["speed_rule"] = policy.to_dict()
        for sim_name, kernel_set in simulations.items():
            hook = None if kernel_set is None else KernelHook(kernel_set, spec, mission.period)
            run = run_missions(ctx.design, program, spec, cfg.missions,
                               seed=ctx.seed(PREDICTION_SIM_SEED), hook=hook,
                               speed_policy=policy)
            row[f"atr_{sim_name}"] = float(run.atr[-1])
        run = run_missions(ctx.deploy, program, ctx.spec, cfg.missions,
                           seed=ctx.seed(PREDICTION_DEPLOY_SEED), speed_policy=policy)
        row["atr_deploy"] = float(run.atr[-1])
        for sim_name in simulations:
            row[f"error_{sim_name}"] = row[f"atr_{sim_name}"] - row["atr_deploy"]
        rows[name] = row
        ctx.bar.set_postfix_str(f"prediction {len(rows)}/{len(programs)}")
    mean_abs = {sim_name: float(np.mean([abs(r[f"error_{sim_name}"]) for r in rows.values()]))
                for sim_name in simulations}
    return {"note": "error = ATR in the simulation - ATR in the deployment (our simulation with "
                    "the ramp, not a real robot); design_sim = no kernels, kernels_alg1 = "
                    "Algorithm 1 alone, kernels = with our refinement rounds",
            "seeds": {"simulation": ctx.seed(PREDICTION_SIM_SEED),
                      "deployment": ctx.seed(PREDICTION_DEPLOY_SEED)},
            "programs": rows, "mean_abs_error": mean_abs}

