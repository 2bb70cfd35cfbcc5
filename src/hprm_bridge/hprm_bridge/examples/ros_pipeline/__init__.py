"""A four-node rclpy pipeline: camera -> detector -> planner -> controller.

Written against rclpy and the standard messages only: the same files run
under ``ros2 run``/``python3 camera.py`` with a real ROS 2 and, unchanged,
as HPRM federates::

    hprm-ros run camera.py detector.py planner.py controller.py --timeout "1 s"

- ``camera`` publishes ``/camera/image_raw`` (``sensor_msgs/Image``, rgb8,
  640x480 at 30 Hz by default: parameters ``width``, ``height``, ``fps``,
  ``seed``, ``frames``): a fixed noise background from a seeded generator
  with a bright square whose path is drawn from the same generator.
- ``detector`` finds the square (numpy, no Python loop over pixels) and
  publishes its centroid and area on ``/detections``
  (``geometry_msgs/PointStamped``, the image's header).
- ``planner`` turns it into a goal ahead of the robot on ``/goal``
  (``geometry_msgs/PoseStamped``).
- ``controller`` steers towards the goal on ``/cmd_vel``
  (``geometry_msgs/Twist``) and prints one ``CMD`` line per command with the
  camera stamp and the stamp-to-here latency by the system clock.
"""
