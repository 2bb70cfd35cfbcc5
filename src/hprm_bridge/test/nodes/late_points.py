"""A lateness handler for the gateway (``--lateness late_points:negate``): a late
/points message is delivered at its arrival with its x negated, so a test can
tell it went through the handler."""


def negate(topic, msg, stamp_ns, arrival_ns):
    assert arrival_ns > stamp_ns  # late: its stamp lies behind its arrival
    msg.point.x = -msg.point.x
    return msg
