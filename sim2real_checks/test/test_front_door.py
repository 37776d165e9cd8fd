"""lazy_exports (front_door.py): a front-door name loads its module on first use only; a name
exported twice, or one that is also a submodule's, is refused when the package is imported."""
import importlib
import sys
import textwrap

import pytest


def make_package(root, name, exports):
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        from sim2real_checks import lazy_exports
        __all__, __getattr__, __dir__ = lazy_exports(__name__, {exports!r})
    """))
    (package / "heavy.py").write_text("LOADED = True\n\ndef work():\n    return 42\n")
    (package / "light.py").write_text("def helper():\n    return 1\n")
    return package


@pytest.fixture
def on_path(tmp_path):
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("frontdoor_")]:
        del sys.modules[name]


def test_a_name_loads_its_module_on_first_use(on_path):
    make_package(on_path, "frontdoor_ok", {"heavy": ["work"], "light": ["helper"]})
    package = importlib.import_module("frontdoor_ok")
    assert package.__all__ == ["helper", "work"]
    assert "frontdoor_ok.heavy" not in sys.modules
    from frontdoor_ok import work
    assert work() == 42 and "frontdoor_ok.heavy" in sys.modules
    assert "helper" in dir(package)
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        package.missing


@pytest.mark.parametrize("exports, message", [
    ({"heavy": ["work"], "light": ["work"]}, "work is exported by both heavy and light"),
    ({"heavy": ["light"]}, "light .of heavy. is also the name of a submodule"),
])
def test_an_ambiguous_front_door_is_refused(on_path, exports, message):
    make_package(on_path, "frontdoor_bad", exports)
    with pytest.raises(ValueError, match=message):
        importlib.import_module("frontdoor_bad")
