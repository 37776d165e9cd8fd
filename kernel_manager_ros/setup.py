# Installs the Python library src/kernel_manager_ros with its subpackages vehicle and experiments
# (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(
    packages=["kernel_manager_ros", "kernel_manager_ros.vehicle", "kernel_manager_ros.experiments"],
    package_dir={"": "src"}))
