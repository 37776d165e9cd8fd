"""Compliant actuators for articulated soft robots (paper 003).

The C++ core and its bindings arrive with their own issue; this package is their catkin home.
"""
