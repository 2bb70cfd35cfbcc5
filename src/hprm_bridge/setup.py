"""hprm_bridge: an ament_python ROS 2 package that is also plain pip-installable.

Its ROS-free wire client speaks ROS 2 Humble's DDS conventions through the
``cyclonedds`` wheel (which bundles libddsc) and encodes messages with
``rosbags`` (Humble message definitions and a numpy-backed CDR codec).
"""

from setuptools import Extension, find_packages, setup

PACKAGE = "hprm_bridge"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="ROS 2 integration for HPRM, including a ROS-free ROS 2 Humble wire client",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    # rmw's new-message callback for the rclpy backend (backends/rclpy.py); optional:
    # without a C compiler the backend waits for messages on a thread of its own.
    ext_modules=[
        Extension(
            "hprm_bridge.backends._rmw_wake",
            ["hprm_bridge/backends/_rmw_wake.c"],
            optional=True,
        )
    ],
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", ["hprm_bridge/examples/ros_pipeline/pipeline.launch.py"]),
    ],
    # Pinned: the client calls into libddsc's C ABI bundled with this exact wheel,
    # and relies on rosbags' typestore/codec API, which changes between minors.
    install_requires=[
        "numpy>=1.21",
        "cyclonedds==11.0.1",
        "rosbags==0.11.9",
        "pyyaml>=6",
        "Pillow>=9",  # hprm_bridge.numpy: CompressedImage (JPEG/PNG)
        "greenlet>=3",  # callbacks that wait in logical time (rclpy/logical_sleep.py)
        "pointcloud2==0.6.0",  # sensor_msgs_py.point_cloud2 in a ported node
        "hprm_core",
    ],
    # colcon (setuptools >= 80) ignores tests_require: test deps live here.
    # dora-rs: an independent ROS 2 client (Rust, RustDDS) for interop tests and
    # the benchmark baseline.
    extras_require={"test": ["pytest>=7", "pytest-timeout>=2", "dora-rs==1.1.0"]},
    zip_safe=False,
    entry_points={
        "console_scripts": [
            "hprm-ros = hprm_bridge.ros_cli:main",
            # the example package's nodes, for ros2 run / ros2 launch (lib/hprm_bridge/)
            *(
                f"example_{n} = hprm_bridge.examples.ros_pipeline.{n}:main"
                for n in ("camera", "detector", "planner", "controller")
            ),
        ],
        "hprm.benchmarks": [
            "ros2-wire = hprm_bridge.bench.wire:main",
            "ported-pipeline = hprm_bridge.bench.ported_pipeline:main",
            "bridge = hprm_bridge.bench.bridge:main",
            "replay = hprm_bridge.bench.replay:main",
            "services = hprm_bridge.bench.services:main",
        ],
        "hprm.baselines": ["ros2-wire-gather = hprm_bridge.gather_baseline:gather"],
        # copyreg codes a receiving federate must know (hprm_bridge.pickle_extension)
        "hprm.pickle_extensions": ["ros-messages = hprm_bridge.pickle_extension"],
        # <hprm_federation>/<hprm_node> in XML and YAML launch files (read by
        # ROS 2's launch only: hprm_bridge.launch imports launch and launch_ros)
        "launch.frontend.launch_extension": ["hprm_bridge = hprm_bridge.launch"],
    },
)
