"""The Panda layer of sim2real: simulator, reality stand-in, robot over libfranka, trajectories,
real/sim pair recording and the pair data format (no ROS master needed to import)."""
