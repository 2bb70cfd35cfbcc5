"""detector: YOLO on the camera image -> detections (red traffic lights marked).

Plain rclpy. Parameters: ``weights`` (a YOLOv5 checkpoint such as the HPRM paper's
yolov5n.pt, or a yolov8n.onnx exported by ultralytics; empty: YOLOv8n with seeded random
weights, with an error-level log line saying so), ``seed``, ``threads`` (inference
threads; 0: onnxruntime's default), ``transport`` (the sim's: ``bytes`` unwraps each image
from its ``byte[]``). Runs on the GPU when onnxruntime has CUDA, or PyTorch
does (``carla_demo.torch_gpu``).
"""

import warnings

from rclpy.node import Node
from sensor_msgs.msg import PointCloud2

from carla_demo import messages
from carla_demo.fusion_rules import mark_red_lights
from carla_demo.shm_transport import PREFIX, ShmReader
from carla_demo.spin import spin_node
from carla_demo.timing import Timing
from carla_demo.weights import RandomWeightsWarning
from carla_demo.yolo import Detector


class DetectorNode(Node):
    def __init__(self):
        super().__init__("detector")
        weights = self.declare_parameter("weights", "").value
        seed = self.declare_parameter("seed", 0).value
        threads = self.declare_parameter("threads", 0).value
        transport = self.declare_parameter("transport", "topic").value
        image_type = messages.image_type(transport)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RandomWeightsWarning)
            self.detector = Detector(weights or None, seed=seed, threads=threads or None)
        for w in caught:
            self.get_logger().error(str(w.message))
        self.get_logger().info(f"{self.detector.model} on {self.detector.device}")
        self.shm = ShmReader()
        self.timing = Timing("detector")
        self.pub = self.create_publisher(PointCloud2, "detector/detections", 1)
        self.create_subscription(
            image_type, "camera/image", messages.image_callback(transport, self.detect), 1
        )

    def detect(self, msg):
        if msg.header.frame_id.startswith(PREFIX):
            image = self.shm.read(msg.header.frame_id, (msg.height, msg.width, 3))
        else:
            image = messages.image_array(msg, 3)
        stamp = messages.stamp_ns(msg)
        with self.timing.measure(stamp):
            found = mark_red_lights(image, self.detector(image))
        self.pub.publish(messages.detections_msg(found, stamp))


def main(args=None):
    spin_node(DetectorNode, args)


if __name__ == "__main__":
    main()
