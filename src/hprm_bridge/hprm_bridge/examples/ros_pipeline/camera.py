"""Camera node: a seeded synthetic rgb8 video on /camera/image_raw."""

import array
import signal

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

SQUARE = 24  # side of the bright square, pixels


class Camera(Node):
    def __init__(self):
        super().__init__("camera")
        self.width = self.declare_parameter("width", 640).value
        self.height = self.declare_parameter("height", 480).value
        fps = self.declare_parameter("fps", 30.0).value
        seed = self.declare_parameter("seed", 7).value
        self.frames = self.declare_parameter("frames", 0).value  # 0: no end
        rng = np.random.default_rng(seed)
        # Noise stays below 200 so that only the square is bright.
        shape = (self.height, self.width, 3)
        self.background = rng.integers(0, 200, shape, dtype=np.uint8).tobytes()
        self.path = rng  # the square's positions come from the same generator
        self.pub = self.create_publisher(Image, "camera/image_raw", 10)
        self.timer = self.create_timer(1.0 / fps, self.capture)
        self.sent = 0

    def capture(self):
        if self.frames and self.sent >= self.frames:
            self.timer.cancel()
            return
        # One copy of the background, drawn on in place: array.array from bytes
        # is a plain copy under rclpy (no per-element check) and a zero-copy
        # view under HPRM.
        data = array.array("B", self.background)
        frame = np.frombuffer(data, np.uint8).reshape(self.height, self.width, 3)
        y = int(self.path.integers(0, self.height - SQUARE))
        x = int(self.path.integers(0, self.width - SQUARE))
        frame[y : y + SQUARE, x : x + SQUARE] = 255
        msg = Image()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "camera"
        msg.height, msg.width = self.height, self.width
        msg.encoding = "rgb8"
        msg.step = self.width * 3
        msg.data = data
        self.pub.publish(msg)
        self.sent += 1


def interrupt_once(signum, frame):
    """Ctrl-C reaches a launched node twice (the terminal's, then ros2 launch's):
    the first ends spin, any later one must not break the clean-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(args=None):
    signal.signal(signal.SIGINT, interrupt_once)  # before rclpy.init, which chains to it
    rclpy.init(args=args)
    node = Camera()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        print(f"camera: published {node.sent} frames", flush=True)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
