"""Example ROS 2 packages written against rclpy only (no HPRM import)."""
