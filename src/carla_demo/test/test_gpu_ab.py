"""``tools/gpu_ab.sh`` runs the A/B on a GPU machine that reaches no package registry: it
carries wheels for what that machine's image lacks. A requirement of the demo's packages, or
of a carried package, that is neither carried nor on the image ends a device run (minutes of
a lease) at its first import; a simulated device (a venv holding only the image's packages
the demo uses, the carried wheels, a short ``gpu_ab.sh run``) found greenlet and pointcloud2
missing. This checks the lists against the installed packages' own metadata."""

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "gpu_ab.sh"
# the device's Python (no extras: a requirement under one is not installed there)
DEVICE = {"python_version": "3.12", "python_full_version": "3.12.3", "extra": ""}
OURS = {"hprm-core", "hprm-bridge", "carla-demo"}
# the extras of carla_demo that gpu_ab.sh's run needs (the models, the embedded world)
EXTRAS = ("inference", "embedded-world")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _words(name: str) -> list[str]:
    """The words of the bash array ``name=( ... )`` of gpu_ab.sh, comments left out."""
    found = re.search(rf"^{name}=\(\n(.*?)^\)$", SCRIPT.read_text(), re.M | re.S)
    assert found, f"no {name}=( ... ) array in {SCRIPT}"
    return [w for line in found[1].splitlines() for w in line.split("#")[0].split()]


def _array(name: str) -> set[str]:
    """That array as normalized package names."""
    return {_name(w.split("==")[0]) for w in _words(name)}


def _needs(dist: str, extras: tuple[str, ...] = ()) -> set[str]:
    """What ``dist`` requires on the device's Python, with ``extras``."""
    needs = set()
    for text in metadata.requires(dist) or []:
        req = Requirement(text)
        if req.marker is None or any(
            req.marker.evaluate({**DEVICE, "extra": e}) for e in ("", *extras)
        ):
            needs.add(_name(req.name))
    return needs


def test_every_carried_package_is_pinned():
    words = _words("PACKAGES")
    assert words and all(re.fullmatch(r"[\w.-]+==[\w.]+", w) for w in words), words


def test_the_demos_requirements_are_carried_or_on_the_image():
    covered = _array("PACKAGES") | _array("THERE") | OURS
    needs = _needs("hprm_core") | _needs("hprm_bridge") | _needs("carla_demo", EXTRAS)
    assert needs - covered == set(), "add these to gpu_ab.sh's PACKAGES (or THERE)"


def test_what_is_carried_brings_its_own_requirements():
    carried, there = _array("PACKAGES"), _array("THERE")
    installed = {_name(d.metadata["Name"]) for d in metadata.distributions()}
    here = sorted(carried & installed)
    if not here:
        pytest.skip("none of the carried packages is installed here")
    # onnx2torch (the GPU detector's converter) is not installed here: its own
    # requirements (numpy, onnx, torch, torchvision) are on the image
    missing = {p: _needs(p) - carried - there for p in here}
    assert {p: m for p, m in missing.items() if m} == {}
