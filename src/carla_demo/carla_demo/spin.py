"""The demo nodes' ``main``: rclpy's usual init / spin / clean-up, once for all four.

Plain rclpy. Ctrl-C, a shutdown from outside, and ``raise SystemExit`` in a callback (the
sim's way of ending the run: ``rclpy.shutdown()`` there deadlocks Humble's executor) all end
spin quietly; the node is destroyed either way.
"""

import rclpy
from rclpy.executors import ExternalShutdownException


def spin_node(node_class, args=None):
    rclpy.init(args=args)
    node = node_class()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException, SystemExit):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
