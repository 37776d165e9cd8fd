# Installs the Python library src/sim2real_gazebo (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["sim2real_gazebo"], package_dir={"": "src"}))
