"""Session-wide test set-up for every package's tests (``./test.sh``)."""

import os
import signal


def pytest_configure(config):
    # Several tests press Ctrl-C on the processes they start (SIGINT to `hprm run`, a ported
    # node, ros2 launch). A non-interactive shell starts a background job (`./test.sh &`, a CI
    # runner's step) with SIGINT ignored, and children inherit that: the Ctrl-C would be lost
    # and those tests would hang until their timeout. Python handlers are not inherited
    # across exec, so one here gives every child the default SIGINT back.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _share_domains_between_workers()


def _share_domains_between_workers():
    """Under pytest-xdist (``./test.sh`` runs several workers at once) each worker gets
    its own share of the ROS domain ids. The tests start real DDS participants, many on
    ``/chatter``: two workers that drew the same domain would hear each other's talkers.
    ``HPRM_DOMAIN_SHARD`` (read by ``hprm_bridge.wire.dds_config.random_domain_id``, which
    tests and benchmarks draw their domains from; inherited by every process a test
    starts) gives worker K of N the ids that are K modulo N; ``ROS_DOMAIN_ID``, for a
    program started without a domain of its own, is one of them instead of the 0 every
    worker would share."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... in a worker
    if not worker.startswith("gw"):
        return
    k, n = int(worker[2:]), int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ["HPRM_DOMAIN_SHARD"] = f"{k}/{n}"
    os.environ["ROS_DOMAIN_ID"] = str(k + n)  # k modulo n, never 0, below 101 for n <= 50
