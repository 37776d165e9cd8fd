"""A re-grasp on demand for the controllers' tests (simulation): an episode in which the cube is
taken out of the hand and put back on the floor, and the threads the grasp selection ran on. The
camera is the ideal one: these tests are about where the grasp is planned, not the tracker."""
import threading
from typing import List, Tuple

import numpy as np
import pybullet

from trifinger_controllers import cube, task
from trifinger_controllers.controllers.base import Controller
from trifinger_controllers.perception import PerceptionConfig
from trifinger_controllers.platform import SimulatedPlatform
from trifinger_controllers.types import CubePose

#: Where the cube is put: on the floor, 7 cm from the centre (as test_mp's drop).
PUT_AT = CubePose(np.array([0.05, -0.05, task.RESTING_HEIGHT]), cube.IDENTITY)


def selection_threads(controller: Controller) -> List[int]:
    """The idents of the threads the controller's grasp selection runs on, one per call from
    now on (the selection itself runs unchanged)."""
    planner = controller.grasp_planner
    select = planner.select
    threads: List[int] = []

    def recorded(observation, kinematics, **inputs):
        threads.append(threading.get_ident())
        return select(observation, kinematics, **inputs)

    planner.select = recorded
    return threads


def knocked_episode(controller: Controller, seed: int, initial: CubePose, goal: CubePose,
                    steps: int, knock_step: int, put_at: CubePose = PUT_AT
                    ) -> Tuple[np.ndarray, CubePose, np.ndarray]:
    """Run ``controller`` for ``steps`` 1 ms steps from ``initial`` towards ``goal``; at
    ``knock_step`` the cube is put at ``put_at`` (on the floor, out of the hand). Returns the
    torques of every call (calls, 9), the true cube pose and the joint positions at the end."""
    platform = SimulatedPlatform(seed=seed, perception=PerceptionConfig.ideal())
    try:
        observation = platform.reset(initial, goal)
        controller.reset(observation)
        period = int(round(1000 / controller.rate_hz))
        torques, torque = [], np.zeros(9)
        for step in range(steps):
            if step == knock_step:
                pybullet.resetBasePositionAndOrientation(
                    platform.simulation.cube._object_id, put_at.position, put_at.orientation,
                    physicsClientId=platform.client_id)
            if step % period == 0:
                torque = controller.compute(observation)
                torques.append(torque)
            observation = platform.step(torque)
        return np.array(torques), platform.true_cube_pose(), observation.robot.position
    finally:
        platform.close()
