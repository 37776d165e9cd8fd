"""The Algorithm 1 options that the Panda tools (``pair-kernels``, ``panda-kernels``) share: one
definition of each flag, its default from a :class:`GenerationConfig`."""
from __future__ import annotations

import argparse
import dataclasses

from kernel_manager_ros.generation import GenerationConfig


def add_generation_arguments(parser: argparse.ArgumentParser, defaults: GenerationConfig) -> None:
    """``--rollouts --max-rollout-length --epsilon-c --epsilon-p --sigma --ridge --fit-length``
    with ``defaults``' values (``--epsilon-c`` defaults to the state spec's)."""
    parser.add_argument("--rollouts", type=int, default=defaults.rollouts, metavar="N",
                        help="paired roll-outs (default %(default)s)")
    parser.add_argument("--max-rollout-length", type=int, default=defaults.max_rollout_length,
                        metavar="L", help="steps per roll-out (default %(default)s)")
    parser.add_argument("--epsilon-c", type=float, metavar="EPS",
                        help="eq. 8 state threshold (default: the config's)")
    parser.add_argument("--epsilon-p", type=float, default=defaults.epsilon_p, metavar="P",
                        help="probability gap of a divergence (default %(default)s)")
    parser.add_argument("--sigma", type=float, default=defaults.sigma, metavar="SIGMA",
                        help="kernel region N(0, sigma^2) (default %(default)s)")
    parser.add_argument("--ridge", type=float, default=defaults.ridge, metavar="R",
                        help="ridge toward the identity transfer (default %(default)s)")
    parser.add_argument("--fit-length", type=int, default=defaults.fit_length, metavar="K",
                        help="transitions after the divergence in the fit (default %(default)s)")


def generation_config(args: argparse.Namespace, defaults: GenerationConfig,
                      seed: int) -> GenerationConfig:
    """``defaults`` with the options of :func:`add_generation_arguments` and ``seed``."""
    return dataclasses.replace(
        defaults, rollouts=args.rollouts, max_rollout_length=args.max_rollout_length,
        epsilon_c=args.epsilon_c, epsilon_a=args.epsilon_c, epsilon_p=args.epsilon_p,
        sigma=args.sigma, ridge=args.ridge, fit_length=args.fit_length, seed=seed)
