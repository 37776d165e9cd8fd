"""Shared input and output checks of the sim2real nodes (no ROS master needed to import)."""
from sim2real_checks.front_door import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "cli": ["ToolParser", "add_common", "run"],
    "diagnostics": ["GuardDiagnostics", "node_guard"],
    "errors": ["Rejected"],
    "finite": ["non_finite_fields", "require_finite"],
    "front_door": ["lazy_exports"],
    "fuzz": ["hostile_cases"],
    "guard": ["Guard"],
    "joint_state": ["InvalidJointState", "JointBounds", "JointStateLayout", "JointStateSpec", "MALFORMED",
        "MISSING_JOINT", "NON_FINITE", "check_fields", "check_joint_state"],
    "launch_testing": ["launch_params", "param_mapping"],
    "listening": ["descendants", "listening_sockets", "node_pid"],
    "node": ["mapping_param", "run_node", "warn_deprecated_path"],
    "node_testing": ["StandInParameters", "StartUp", "check_fails_at_start", "start_node"],
    "outputs": ["atomic_path", "output_folder", "plain", "provenance", "save_figure", "source_commit",
        "write_json"],
    "params": ["flag_param", "integer_param", "number_param", "optional_number_param"],
    "pose": ["check_pose"],
    "scalar": ["check_scalar"],
    "stamps": ["check_not_ahead"],
    "tool_testing": ["check_argument_error", "check_conventions", "check_help", "run_tool"],
    "topic_testing": ["TopicRecorder", "joint_state_message", "wait_for"],
    "yaml_files": ["read_yaml"],
})
