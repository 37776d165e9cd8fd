"""Structured TriFinger cube policies (Funk et al. 2021, paper 004).

The library arrives with its own issue; this package is the catkin home it will live in.
"""
