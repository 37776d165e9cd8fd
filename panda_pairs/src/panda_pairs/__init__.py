"""Real/sim pair data of the Panda: recording, the pair bag format with its one reader and writer,
resimulation, data sets, metrics and the gap report. No ROS master needed to import."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "alignment": ["AlignedPair", "Progress", "align_all"],
    "bag_set": ["BagSet", "resolve_bags"],
    "collection": ["CollectionRequest", "CollectionResult", "load_simulator", "run_collection"],
    "data_source": ["load_dataset"],
    "dataset": ["Dataset", "SPLITS", "assign_splits", "check_fractions"],
    "errors": ["BagError"],
    "gap_report": ["gap_statistics", "plot_torque_panels"],
    "joint_state_bag": ["BAG_READ_ERRORS", "BagFile", "JointStates", "read_joint_states", "unreadable_bag"],
    "metrics": ["QUANTITIES", "per_joint_mse"],
    "normalisation": ["JointLimitScaler"],
    "pair_bag": ["PairRecording", "Stream", "TrajectoryPair", "read_pairs"],
    "pairs": ["CollectionSummary", "LockStepRobot", "PairBagWriter", "collect_pairs", "pair_event"],
    "resimulation": ["ResimulationRequest", "ResimulationSummary", "resimulate"],
})
