#!/usr/bin/env python3
"""Prints the path of pybullet_data's Panda URDF (the nominal simulator's) without a newline,
for ``<param command=...>`` in test/fuzz.test."""
import os
import sys

import pybullet_data

PANDA_URDF = os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")

if __name__ == "__main__":
    sys.stdout.write(PANDA_URDF)
