"""Realeasy: sim-to-real data path and residual learning for the Franka Emika Panda."""
