"""carla_demo: an ament_python ROS 2 package (colcon build), also pip-installable."""

from setuptools import find_packages, setup

PACKAGE = "carla_demo"
NODES = ("sim", "agent", "detector", "fusion")
# The models' inference stack and the embedded world are extras: the node files and the
# harness import them only when they run. Pinned: the embedded world's determinism (and so the
# reference control sequence) depends on highway-env's dynamics, and the detector's graph on
# the ONNX opset onnxruntime implements.
INFERENCE = ["onnx==1.23.2", "onnxruntime==1.32.0"]
EMBEDDED_WORLD = ["highway-env==1.12.1"]

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
        (f"share/{PACKAGE}/launch", ["launch/ab.launch.py"]),
    ],
    install_requires=["numpy>=1.21", "Pillow>=9", "hprm_core", "hprm_bridge"],
    extras_require={
        "inference": INFERENCE,
        "embedded-world": EMBEDDED_WORLD,
        "carla": ["carla==0.9.15"],
        # colcon (setuptools >= 80) ignores tests_require: test deps live here.
        "test": ["pytest>=7", *INFERENCE, *EMBEDDED_WORLD],
    },
    entry_points={
        # ros2 run carla_demo sim / ros2 launch (installed in lib/carla_demo by setup.cfg)
        "console_scripts": [f"{n} = carla_demo.{n}_node:main" for n in NODES],
        "hprm.benchmarks": ["carla-ab = carla_demo.bench:main"],
    },
    zip_safe=False,
)
