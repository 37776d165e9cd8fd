"""Differentiable recursive Newton-Euler identification (Sutanto et al. 2020, paper 002).

The library arrives with its own issue; this package is the catkin home it will live in.
"""
