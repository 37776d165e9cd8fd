"""The Panda simulators and the reality stand-in: the robot model and configs, the nominal simulator
(PyBullet; Gazebo 11 through panda_gazebo), the stand-in (MuJoCo), trajectories and their limits,
the /sim and /real topic layout and the robot nodes. No ROS master needed to import; the names
below load their module on first use (sim2real_checks.front_door)."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "bag_layout": ["COMMAND", "DEFAULT_LABEL", "EVENTS", "EVENT_END", "EVENT_START", "JOINT_STATES", "LABEL",
        "REALISTIC", "REAL_NS", "SIM_NS", "label_topic", "topic"],
    "controllers": ["JointImpedanceController", "PIDController", "make_controller"],
    "errors": ["ConfigError", "PandaError", "TrajectoryRejected"],
    "gazebo_model": ["GazeboModel", "SIMS"],
    "gazebo_robot": ["GazeboRobot"],
    "identified_config": ["IDENTIFIED_LABEL", "JointIdentification", "identified_sim_config", "stable_rate",
        "write_identified_config"],
    "limits": ["CONFIG_DIR", "DEFAULT_LIMITS_FILE", "JointLimits"],
    "motion_limits": ["HermiteSegments", "check_motion_limits", "motion_extremes"],
    "robot": ["ExternalCommand", "JointMeasurement", "JointReference", "JointTorque", "SimulatedRobot"],
    "robot_config": ["REALITY_CONFIG_FILE", "RobotConfig", "SIM_CONFIG_FILE"],
    "robot_node": ["RobotNode", "SET_JOINT_STATE", "joint_state_target", "robot_params", "set_state_spec"],
    "ros_conversions": ["joint_state_msg", "joint_trajectory_msg", "to_time", "trajectory_from_msg"],
    "stability": ["stable_physics_rate"],
    "trajectory": ["PlannedTrajectory", "TrajectoryExecutor"],
    "trajectory_generation": ["DEFAULT_SETTINGS_FILE", "FAST_MOVES_FILE", "GeneratorSettings", "KINDS",
        "TrajectoryGenerator"],
    "urdf_model": ["load_urdf", "nominal_urdf_path", "prepare_dynamics_urdf"],
    "work_cycle": ["DEFAULT_WORK_CYCLE_FILE", "TASK", "VARIATION_BOUND", "WorkCycleGenerator",
        "WorkCycleSettings", "make_generator"],
})
