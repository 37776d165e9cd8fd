# Installs the Python library src/compliant_actuator_gazebo with its subpackage experiments
# (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(
    packages=["compliant_actuator_gazebo", "compliant_actuator_gazebo.experiments"],
    package_dir={"": "src"}))
