"""Monte Carlo state-space kernels (Lyons et al. 2022, paper 001).

The modules here are the kernel library (state spec, histories, Algorithm 1, kernel files, the
kernel manager and its node) and the Panda adapter (``panda``); the delivery-vehicle simulator is
the subpackage ``vehicle``, the experiments with their plots ``experiments``. The library imports
neither of them nor matplotlib (test_kernel_layout.py).
"""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "config_files": ["config_path"],
    "errors": ["KernelError"],
    "generation": ["GenerationConfig", "generate_kernels"],
    "history": ["Episode", "History"],
    "kernel": ["Kernel", "KernelSet"],
    "kernel_file": ["load_kernels", "save_kernels"],
    "kernel_index": ["KernelIndex"],
    "manager": ["KernelManager"],
    "panda": ["PANDA_TOPICS", "PairKernels", "PandaLayout", "histories", "pair_kernels",
              "read_pair_trajectories", "replay", "select_trajectories", "step_indices"],
    "state_spec": ["StateSpec"],
    "transfer": ["LinearTransfer", "SensorTransfer"],
    "vehicle.mission": ["MissionConfig"],
    "vehicle.model": ["VehicleConfig"],
    "vehicle.run": ["run_missions"],
})
