"""hprm_core: an ament_python ROS 2 package that is also plain pip-installable."""

from setuptools import find_packages, setup

PACKAGE = "hprm_core"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Deterministic federated reactor runtime (Lingua Franca semantics) for HPRM",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    install_requires=["numpy>=1.21", "msgpack>=1.0"],
    # colcon (setuptools >= 80) ignores tests_require: test deps live here.
    extras_require={
        "fast": ["pyarrow>=12"],  # Arrow tables/tensors, safe-mode Arrow IPC, bench baseline
        "plot": ["matplotlib>=3.5"],  # hprm bench ... --plot
        "test": ["pytest>=7", "pytest-timeout>=2", "pyarrow>=12", "matplotlib>=3.5"],
    },
    zip_safe=True,
    entry_points={
        "console_scripts": ["hprm = hprm_core.cli:main"],
        "hprm.benchmarks": [
            "reactions = hprm_core.bench.reactions:main",
            "pingpong = hprm_core.bench.pingpong:main",
            "store = hprm_core.bench.store:main",
            "serialize = hprm_core.bench.serialize:main",
            "gather = hprm_core.bench.gather:main",
        ],
    },
)
