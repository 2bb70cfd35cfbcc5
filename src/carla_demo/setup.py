"""carla_demo: an ament_python ROS 2 package (placeholder), also plain pip-installable."""

from setuptools import find_packages, setup

PACKAGE = "carla_demo"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="CARLA PPO+YOLO fusion demo: plain ROS 2 baseline and HPRM variants",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    install_requires=["hprm_core", "hprm_bridge"],
    # colcon (setuptools >= 80) ignores tests_require: test deps live here.
    extras_require={"test": ["pytest>=7"]},
    zip_safe=False,
)
