"""The Panda over libfranka's FCI: the bridge (franky), the reality stand-in served over the same
protocol, the real-time preflight and the franka_ros relay. No ROS master needed to import; the
names below load their module on first use (sim2real_checks.front_door)."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "errors": ["RobotError"],
    "fci_bridge": ["BRIDGE_CONFIG_FILE", "BridgeConfig", "FciBridge", "RobotSample"],
    "fci_bridge_node": ["FciBridgeNode"],
    "fci_standin": ["FciStandin"],
    "franka_ros_relay": ["FrankaRosRelay"],
    "homing": ["HomingSettings", "homing_trajectory"],
    "reflexes": ["ReflexMonitor"],
    "preflight": ["Check", "run_preflight", "verdict"],
    "realtime_host": ["realtime_kernel"],
    "time_mapping": ["RobotClock"],
})
