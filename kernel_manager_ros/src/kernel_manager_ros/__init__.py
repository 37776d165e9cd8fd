"""Monte Carlo state-space kernels (Lyons et al. 2022, paper 001).

The modules here are the kernel library (state spec, histories, Algorithm 1, kernel files, the
kernel manager and its node) and the Panda adapter (``panda``); the delivery-vehicle simulator is
the subpackage ``vehicle``, the experiments with their plots ``experiments``. The library imports
neither of them nor matplotlib (test_kernel_layout.py).
"""
