"""The Panda for Gazebo 11 from a simulator configuration: the model gzserver spawns and the
parameters of panda_gazebo's plugin (``libpanda_effort_plugin.so``), one contract for the
lock-stepped runs (gazebo_robot.py) and the ``panda_gazebo`` node of ``sim:=gazebo``.

The URDF is the one PyBullet loads (urdf_model.prepare_dynamics_urdf: geometry removed, the
fingers fixed, the configuration's inertial overrides), fixed to a ``world`` link, with three
changes for Gazebo: the joints' velocity limits are raised to PyBullet's ``maxJointVelocity``
(Gazebo stops driving a joint that passes its URDF velocity limit, PyBullet does not), their effort
limits to the limits plus the friction's bound |phi1| (Gazebo clips the force a joint receives to
its URDF effort; the plugin saturates the motor torque itself and the joint receives it minus the
friction, which PyBullet applies in full), and the plugin block. The configuration keeps its
controller gains, rates, friction and torque-sensor offset; the effects only the reality stand-in
has (elastic joints, encoder and sensor noise) are refused, and the physics engine named in it is
replaced by Gazebo's ODE.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from panda_sim2real.errors import ConfigError
from panda_sim2real.limits import JointLimits
from panda_sim2real.robot_config import PIDGains, RobotConfig
from panda_sim2real.urdf_model import check_joints, load_urdf, prepare_dynamics_urdf

PLUGIN = "libpanda_effort_plugin.so"
NAMESPACE = "sim"
PARAMETERS = "gazebo"                 # the plugin's parameters: /<namespace>/<PARAMETERS>/...
VELOCITY_LIMIT = 100.0                # rad/s in the Gazebo URDF: PyBullet's maxJointVelocity
SIMS = ("pybullet", "gazebo")
"""The nominal simulators behind /sim: the configuration's engine (PyBullet), or Gazebo 11."""


def gazebo_label(label: str) -> str:
    """/sim/label in Gazebo: 'simulation' -> 'Gazebo 11 simulation', 'simulation (identified)'
    -> 'Gazebo 11 simulation (identified)'; another label gets ' (Gazebo 11)'."""
    if label.startswith("simulation"):
        return "Gazebo 11 " + label
    return f"{label} (Gazebo 11)"


@dataclass(frozen=True)
class GazeboModel:
    """What gzserver needs for one Panda: the URDF text to spawn, the plugin's parameters
    ({full name: value}), the physics rate of the world and the label."""

    urdf: str
    params: dict[str, Any]
    physics_rate: float
    label: str
    namespace: str = NAMESPACE


def check_gazebo_config(config: RobotConfig) -> None:
    """ConfigError unless the Gazebo plugin can run ``config``: a PID controller, rigid joints,
    no noise (Gazebo's run is deterministic), a publish rate dividing the physics rate."""
    where = f"robot config {config.source}"
    if not isinstance(config.controller, PIDGains):
        raise ConfigError(f"{where}: the Gazebo simulator runs the effort PID (controller.type: pid), "
                          f"not a joint impedance")
    if config.elasticity is not None:
        raise ConfigError(f"{where}: the Gazebo simulator has rigid joints (elasticity must be absent)")
    if config.encoders is not None:
        raise ConfigError(f"{where}: the Gazebo simulator has no encoder noise (encoders must be absent)")
    if config.unmodelled is not None:
        raise ConfigError(f"{where}: the Gazebo simulator has none of the stand-in's unmodelled "
                          f"effects (unmodelled must be absent)")
    if config.torque_sensor is not None and np.any(config.torque_sensor.noise_std != 0.0):
        raise ConfigError(f"{where}: the Gazebo simulator has no sensor noise "
                          f"(torque_sensor.noise_std must be 0; an offset is applied)")


def gazebo_urdf(config: RobotConfig, limits: JointLimits, namespace: str = NAMESPACE) -> str:
    """The URDF text gzserver spawns (module docstring); ConfigError for a missing, unreadable
    or inconsistent URDF, naming it."""
    root = load_urdf(config.urdf)
    check_joints(root, limits.joint_names, config.urdf or "pybullet_data panda.urdf")
    root = ET.fromstring(prepare_dynamics_urdf(root, config.inertials))
    children = {j.find("child").get("link") for j in root.iter("joint") if j.find("child") is not None}
    roots = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    if len(roots) != 1:
        raise ConfigError(f"URDF {config.urdf or 'pybullet_data panda.urdf'} has {len(roots)} root "
                          f"links {roots}, expected one")
    if roots[0] != "world":
        ET.SubElement(root, "link", {"name": "world"})
        joint = ET.SubElement(root, "joint", {"name": "world_joint", "type": "fixed"})
        ET.SubElement(joint, "parent", {"link": "world"})
        ET.SubElement(joint, "child", {"link": roots[0]})
    friction = np.abs(config.friction.phi1) if config.friction is not None else np.zeros(limits.dof)
    index = {name: j for j, name in enumerate(limits.joint_names)}
    for joint in root.iter("joint"):
        limit = joint.find("limit")
        if joint.get("name") in index and limit is not None:
            j = index[joint.get("name")]
            limit.set("velocity", repr(VELOCITY_LIMIT))
            limit.set("effort", repr(float(limits.effort[j] + friction[j]) * (1.0 + 1e-9)))
    gazebo = ET.SubElement(root, "gazebo")
    plugin = ET.SubElement(gazebo, "plugin", {"name": "panda_effort", "filename": PLUGIN})
    ET.SubElement(plugin, "robotNamespace").text = namespace
    ET.SubElement(plugin, "parameters").text = PARAMETERS
    return ET.tostring(root, encoding="unicode")


def plugin_params(config: RobotConfig, limits: JointLimits, namespace: str = NAMESPACE,
                  initial_positions: Optional[np.ndarray] = None) -> dict[str, Any]:
    """The plugin's parameters ({/<namespace>/gazebo/<name>: value}; panda_effort_plugin.cpp)."""
    gains = config.controller
    q0 = limits.home if initial_positions is None else np.asarray(initial_positions, dtype=float)
    values: dict[str, Any] = {
        "joint_names": list(limits.joint_names),
        "position_min": limits.position_min, "position_max": limits.position_max,
        "velocity": limits.velocity, "effort": limits.effort, "initial_positions": q0,
        "p": gains.p, "i": gains.i, "d": gains.d, "i_clamp": gains.i_clamp,
        "latency": float(config.latency), "publish_rate": float(config.publish_rate),
        "label": gazebo_label(config.label)}
    if config.friction is not None:
        values.update(friction_phi1=config.friction.phi1, friction_phi2=config.friction.phi2,
                      friction_phi3=config.friction.phi3)
    if config.torque_sensor is not None:
        values["torque_offset"] = config.torque_sensor.offset
    prefix = f"/{namespace}/{PARAMETERS}/"
    return {prefix + key: (np.asarray(v, dtype=float).tolist() if isinstance(v, np.ndarray) else v)
            for key, v in values.items()}


def gazebo_model(config: RobotConfig, limits: JointLimits, namespace: str = NAMESPACE,
                 initial_positions: Optional[np.ndarray] = None) -> GazeboModel:
    """The model and parameters of ``config`` in Gazebo; ConfigError for what it cannot run."""
    check_gazebo_config(config)
    return GazeboModel(gazebo_urdf(config, limits, namespace),
                       plugin_params(config, limits, namespace, initial_positions),
                       float(config.physics_rate), gazebo_label(config.label), namespace)
