"""The rigid-body algorithms in one namespace (``from diffnea_ros import algorithms as alg``), as
Pinocchio's free functions over (model, inputs); batch-first, differentiable in q, qd, qdd and the
inertials. Each is defined in its own module:

- :mod:`~diffnea_ros.inverse_dynamics`: :func:`rnea`, tau = H(q) qdd + C(q, qd) qd + g(q) + D qd
  (paper 002 eq. 1-2, §4.2), and its passes :func:`body_motion`, :func:`project_to_joints`;
- :mod:`~diffnea_ros.kinematics`: :func:`forward_kinematics`, world poses of the link frames;
- :mod:`~diffnea_ros.crba`: :func:`mass_matrix` H(q) (CRBA) and :func:`forward_dynamics`;
- :mod:`~diffnea_ros.spatial`: :func:`spatial_inertia` and the spatial algebra they share;
- :class:`~diffnea_ros.model.Inertials`, their inertial argument.
"""
from diffnea_ros.crba import forward_dynamics, mass_matrix
from diffnea_ros.inverse_dynamics import BodyMotion, body_motion, joint_contributions, project_to_joints, rnea
from diffnea_ros.kinematics import forward_kinematics, joint_placements
from diffnea_ros.model import Inertials
from diffnea_ros.spatial import spatial_inertia

__all__ = ["BodyMotion", "Inertials", "body_motion", "forward_dynamics", "forward_kinematics", "joint_contributions",
           "joint_placements", "mass_matrix", "project_to_joints", "rnea", "spatial_inertia"]
