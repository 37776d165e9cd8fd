"""The sim-to-real pipeline: identify -> Realeasy on top -> kernels, evaluated stage by stage."""
from sim2real_checks import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "errors": ["PipelineError"],
    "runner": ["run_pipeline"],
    "settings": ["CONFIG_FILE", "PipelineSettings", "load_settings"],
    "stages": ["stage_list"],
})
