# Installs the Python library src/diffnea_ros with its subpackage experiments (catkin_python_setup);
# do not call directly.
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(packages=["diffnea_ros", "diffnea_ros.experiments"],
                                 package_dir={"": "src"}))
