"""CARLA PPO+YOLO fusion demo and its A/B latency harness (placeholder: nothing here yet).

The package exists so that ``colcon build`` of the workspace builds every package under
``src/``; the demo itself (see the package's README) lands here.
"""
