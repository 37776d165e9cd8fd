"""Monte Carlo state-space kernels (Lyons et al. 2022, paper 001).

The library arrives with its own issue; this package is the catkin home it will live in.
"""
