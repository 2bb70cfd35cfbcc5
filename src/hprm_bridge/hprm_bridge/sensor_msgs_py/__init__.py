"""``sensor_msgs_py`` in a ported node (:mod:`~hprm_bridge.sensor_msgs_py.point_cloud2`).

common_interfaces' Python helpers come with a ROS 2 install, not from PyPI, so a node
ported to a machine without ROS 2 could not import them; in a federate's process
``import sensor_msgs_py`` gives this package, as ``import rclpy`` gives
:mod:`hprm_bridge.rclpy` (:func:`hprm_bridge.porting.install_imports`).
"""
