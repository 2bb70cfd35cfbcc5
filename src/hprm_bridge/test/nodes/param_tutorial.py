"""The ROS 2 parameters tutorial's node, in its shape (no HPRM import): declares
my_parameter, reads it at each timer tick through get_parameter_value().string_value,
then sets it back with rclpy.parameter.Parameter and rclpy.Parameter.Type, as the
tutorial does; prints each tick, then STOP after the third."""

import rclpy
import rclpy.node


class MinimalParam(rclpy.node.Node):
    def __init__(self):
        super().__init__("minimal_param_node")
        self.declare_parameter("my_parameter", "world")
        self.ticks = 0
        self.timer = self.create_timer(0.1, self.timer_callback)

    def timer_callback(self):
        my_param = self.get_parameter("my_parameter").get_parameter_value().string_value
        print(f"TICK {self.ticks} Hello {my_param}!", flush=True)
        reset = rclpy.parameter.Parameter("my_parameter", rclpy.Parameter.Type.STRING, "world")
        result = self.set_parameters([reset])[0]
        print(f"SET {result.successful}", flush=True)
        self.ticks += 1
        if self.ticks == 3:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = MinimalParam()
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
