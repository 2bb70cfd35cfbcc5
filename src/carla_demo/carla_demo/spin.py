"""The demo nodes' ``main``: rclpy's usual init / spin / clean-up, once for all four.

Plain rclpy. Ctrl-C, a shutdown from outside, and ``raise SystemExit`` in a callback (the
sim's way of ending the run: ``rclpy.shutdown()`` there deadlocks Humble's executor) all end
spin quietly; the node is destroyed either way.

Every node takes one more parameter here, ``cpu`` (default -1: any CPU): the CPU its
callbacks run on. The harness puts the frame's critical path (sim, detector, fusion) on one
CPU, in every variant alike: a message then wakes its receiver on the CPU the sender is about
to leave instead of another one, which on a virtual machine costs a wake-up across virtual
CPUs per hop (docs/carla_ab.md measures it). Not beside HPRM's busy-polling, whose nodes
spin instead of sleeping: on one CPU they would wait for each other's time slices
(`carla_demo.ab` refuses the pair).
"""

import rclpy
from rclpy.executors import ExternalShutdownException

from carla_demo.affinity import pin_thread


def spin_node(node_class, args=None):
    rclpy.init(args=args)
    node = node_class()
    try:
        pin_callbacks(node)
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException, SystemExit):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def pin_callbacks(node):
    """Applies the node's ``cpu`` parameter to the calling thread, the one that will spin.

    Only that thread, and only after the node is built: the threads the node started in its
    constructor (onnxruntime's workers, DDS's) keep their CPUs, so the models still use all
    of them; threads started later (by spin) inherit the pin. Which CPU matters:
    onnxruntime pins its own workers to every CPU but the first, which it leaves to the
    thread that calls it; a caller pinned to a worker's CPU halves its parallelism.
    """
    cpu = node.declare_parameter("cpu", -1).value
    if cpu >= 0:
        pin_thread(cpu)
