#!/bin/bash
# Humble and the workspace, as a ROS user's shell has them, then the command.
set -e
source /opt/ros/humble/setup.bash
source /ws/install/setup.bash
mkdir -p /results
exec "$@"
