# Installs the Python library src/sim2real_checks (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["sim2real_checks"], package_dir={"": "src"}))
