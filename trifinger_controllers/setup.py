# Installs the Python library src/trifinger_controllers (catkin_python_setup); do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["trifinger_controllers", "trifinger_controllers.controllers"],
                                  package_dir={"": "src"}))
