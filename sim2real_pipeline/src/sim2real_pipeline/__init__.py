"""The sim-to-real pipeline: identify -> Realeasy on top -> kernels, evaluated stage by stage."""
