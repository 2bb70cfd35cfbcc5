"""Session-wide test set-up for every package's tests (``./test.sh``)."""

import signal


def pytest_configure(config):
    # Several tests press Ctrl-C on the processes they start (SIGINT to `hprm run`, a ported
    # node, ros2 launch). A non-interactive shell starts a background job (`./test.sh &`, a CI
    # runner's step) with SIGINT ignored, and children inherit that: the Ctrl-C would be lost
    # and those tests would hang until their timeout. Python handlers are not inherited
    # across exec, so one here gives every child the default SIGINT back.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
