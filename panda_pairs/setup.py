# Installs the Python library src/panda_pairs (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["panda_pairs"], package_dir={"": "src"}))
