"""A plain rclpy node exercising the logger's filters and levels, then
shutting down from its own timer after 12 ticks."""

import rclpy
from rclpy.node import Node


class LogProbe(Node):
    def __init__(self):
        super().__init__("log_probe")
        log = self.get_logger()
        log.info("hello")
        log.debug("hidden at the default level")
        log.warning("careful")
        for i in range(3):
            log.info(f"once {i}", once=True)
            log.info(f"skip {i}", skip_first=True)
        log.get_child("sub").error("from a child")
        log.set_level(rclpy.logging.LoggingSeverity.DEBUG)
        log.debug("shown at debug")
        self.ticks = 0
        self.create_timer(0.01, self.tick)

    def tick(self):
        self.ticks += 1
        self.get_logger().info(f"tick {self.ticks}", throttle_duration_sec=0.025)
        if self.ticks == 12:
            print("DONE", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = LogProbe()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
