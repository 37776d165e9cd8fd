# Installs the Python library src/panda_sim2real (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["panda_sim2real"], package_dir={"": "src"}))
