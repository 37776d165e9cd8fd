"""Shared input and output checks of the sim2real nodes (no ROS master needed to import)."""
