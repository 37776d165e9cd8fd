"""CIC's camera feedback (paper 004 §IV-C, additions for the tracker's 10 Hz, delayed poses).

:class:`CameraFeedback` is the part of the CIC controller (cic.py) that matches each camera image
with the tips and the sub-goal x_g as they were when it was taken: the moving sub-goal x_g, which
waits while the cube lags (``goal_speed``, ``max_lead``), the camera integral with anti-windup
(``integral_gain``, saturation.py's ``without_windup``), the slow slip estimate and the floor
band (:meth:`CameraFeedback.seen_position`). A mixin: it works on the controller's state.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from trifinger_controllers import cube as cube_geometry
from trifinger_controllers import pose_filter
from trifinger_controllers.controllers.rotation_matrices import matrix_rotation_vector
from trifinger_controllers.controllers.saturation import without_windup
from trifinger_controllers.types import CubePose

#: A camera image is matched with the tip history if their times differ by at most this [s].
HISTORY_TOLERANCE = 0.015
#: Camera errors larger than this [m] are not integrated (slip or loss, not an offset).
INTEGRAL_ERROR_LIMIT = 0.03


class CameraFeedback:
    """CIC's use of the camera images, mixed into cic.py's ``CartesianImpedanceController``: it
    reads and updates the state the controller's ``_start_grasp`` sets (the history, x_g's path,
    the integral, the lead, the slip)."""

    def _remember(self, t: float, tips: np.ndarray, subgoal: np.ndarray,
                  rotation: Optional[np.ndarray] = None) -> None:
        """Keep the tips, x_g and the grasp's orientation of the last ``HISTORY`` calls."""
        self._history.record(t, tips=tips, goal=subgoal,
                             rotation=np.eye(3) if rotation is None else rotation)

    def _at(self, stamp: float) -> Optional[int]:
        """History index of the call at camera time ``stamp`` (None if not kept)."""
        return self._history.index_at(stamp, HISTORY_TOLERANCE)

    def _camera_feedback(self, pose: CubePose, subgoal: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Process the camera pose: on a new image, integrate the error between x_g when the
        image was taken and the observed cube (``integral_gain``, clipped at
        ``integral_limit``; errors over ``INTEGRAL_ERROR_LIMIT`` are a slip, not an offset; none
        once x_g is at a ``goal`` on the floor: the floor's friction holds the cube, and the
        integral would wind up against it) and update the lead of x_g over the cube. Returns x_g
        at the image's time."""
        p = self._p
        k = self._at(pose.stamp)
        then = self._history.values["goal"][k] if k is not None else subgoal
        if pose.stamp != self._last_stamp:
            period = min(max(pose.stamp - self._last_stamp, 0.0), 0.2)
            self._last_stamp = pose.stamp
            error = then - self.seen_position(pose, then)
            self._lead = float(np.linalg.norm(error))
            placed = self._height_band(pose) is not None and np.array_equal(then, goal)
            if self._lead < INTEGRAL_ERROR_LIMIT and not placed:
                step = without_windup(p.integral_gain * period * error, self._windup)
                self._integral = np.clip(self._integral + step, -p.integral_limit, p.integral_limit)
            if k is not None and p.slip_correction > 0.0:
                # how far the cube has turned in the grasp: the camera's orientation against the
                # one the tips held when the image was taken (low-pass: a complementary filter)
                seen = cube_geometry.to_matrix(pose.orientation) @ self._history.values["rotation"][k].T
                rate = min(1.0, p.slip_correction * period)
                self._slip += rate * (matrix_rotation_vector(seen) - self._slip)
        return then

    def _height_band(self, pose: CubePose) -> Optional[tuple[float, float]]:
        """:func:`pose_filter.height_band` of ``pose``, computed once per image (the control
        calls between two images see the same estimate)."""
        key = (pose.stamp, float(pose.position[2]))
        if key != self._band_key:
            self._band_key, self._band = key, pose_filter.height_band(pose)
        return self._band

    def seen_position(self, pose: CubePose, then: np.ndarray) -> np.ndarray:
        """The cube position the image shows; for an estimate the pose filter snapped to the
        floor, the height is x_g's at the image's time ``then`` within the band the snap allows
        (:func:`pose_filter.height_band`: the image bounds the height, it does not measure it)."""
        position = np.asarray(pose.position, dtype=float)
        band = self._height_band(pose)
        if band is None:
            return position
        seen = position.copy()
        seen[2] = min(max(float(then[2]), band[0]), band[1])
        return seen

    def subgoal(self, goal: np.ndarray) -> np.ndarray:
        """x_g for the distance travelled so far along the path from the grasp position, up by
        ``lift_height`` and then straight to ``goal``."""
        p = self._p
        start = self._start_position
        lifted = start + np.array([0.0, 0.0, p.lift_height])
        travelled = self._travelled
        if travelled <= p.lift_height:
            return start + np.array([0.0, 0.0, travelled])
        to_goal = goal - lifted
        dist = float(np.linalg.norm(to_goal))
        travelled -= p.lift_height
        return goal.copy() if travelled >= dist else lifted + to_goal * (travelled / dist)

    def _advance(self, dt: float, goal: np.ndarray) -> np.ndarray:
        """Move x_g on by ``goal_speed * dt`` unless the last image showed the cube more than
        ``max_lead`` behind it (then it waits for the cube); the new x_g."""
        p = self._p
        if self._lead < p.max_lead:
            self._travelled += p.goal_speed * dt
        return self.subgoal(goal)
