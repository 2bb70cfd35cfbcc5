"""numpy views of ROS 2 messages, and messages from numpy arrays.

``numpify(msg)`` and ``msgify(type, array, ...)`` for what robotics code
turns into arrays: ``Image`` (every ``sensor_msgs/image_encodings`` name,
row padding, big-endian data), ``CompressedImage`` (JPEG/PNG through
Pillow), ``PointCloud2`` (structured arrays, any field layout and padding),
``LaserScan``, ``Imu``, ``Odometry``, ``CameraInfo``, ``OccupancyGrid``,
``Pose``/``Transform`` (4x4 matrices), ``Twist``, ``Point``/``Vector3``,
``Quaternion``. Types are recognised by their ROS name, so the same calls
work on HPRM's message classes, rclpy's and rosbags'.

Why views: a 6 MB image or a 1M-point cloud must not be copied to be looked
at; ``numpify`` returns a view of the message's buffer wherever the layout
allows (it does for ``Image``, ``PointCloud2``, ``LaserScan`` and
``OccupancyGrid``), and ``msgify`` keeps a contiguous array's memory as the
message's data. There is no per-element Python loop anywhere.

Example::

    >>> import numpy as np
    >>> from hprm_bridge.numpy import msgify, numpify
    >>> img = msgify("sensor_msgs/msg/Image", np.zeros((480, 640, 3), np.uint8), "rgb8")
    >>> numpify(img).shape
    (480, 640, 3)
"""

from __future__ import annotations

import importlib
import io
import re
from typing import Any

import numpy as np

__all__ = ["merge_rgb", "msgify", "numpify", "split_rgb", "xyz"]

# -- names --------------------------------------------------------------------------


def _type_of(obj: Any) -> str:
    """``pkg/msg/Name`` of a message, a message class or a type string."""
    if isinstance(obj, str):
        pkg, _, name = obj.replace("/msg/", "/").partition("/")
        return f"{pkg}/msg/{name}"
    cls = obj if isinstance(obj, type) else type(obj)
    named = getattr(cls, "__msgtype__", None)  # rosbags
    if named:
        return str(named)
    pkg = cls.__module__.split(".")[0]  # rclpy's and HPRM's: pkg.msg[._name]
    return f"{pkg}/msg/{cls.__name__}"


def _family(kind: Any, ros_type: str) -> type:
    """The class of ``ros_type`` from the same family as ``kind`` (a message
    or class: HPRM's, rclpy's or rosbags'); HPRM's for a type string."""
    from hprm_bridge.messages import message_class

    if isinstance(kind, str):
        return message_class(ros_type)
    cls = kind if isinstance(kind, type) else type(kind)
    if cls is message_class(_type_of(cls)):
        return message_class(ros_type)
    if getattr(cls, "__msgtype__", None):  # rosbags (the wire client's classes)
        from hprm_bridge.wire.typesys import default_registry

        return default_registry().message_class(ros_type)
    module = importlib.import_module(cls.__module__.rsplit(".", 1)[0])  # rclpy: pkg.msg._name
    return getattr(module, ros_type.rsplit("/", 1)[-1])


def _new(kind: Any, ros_type: str) -> Any:
    """An empty message of ``ros_type``, of ``kind``'s family."""
    cls = _family(kind, ros_type)
    if getattr(cls, "__msgtype__", None) and not hasattr(cls, "get_fields_and_field_types"):
        from hprm_bridge.wire.typesys import default_registry

        return default_registry().new(ros_type)  # rosbags' dataclasses take every field
    return cls()


def _bytes_view(data: Any) -> np.ndarray:
    """A message's ``uint8[]`` field as a uint8 array without a copy (numpy,
    ``array.array``, ``bytes``: whatever class made the message)."""
    return (
        np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8)
    )


def _as_bytes_field(arr: np.ndarray) -> Any:
    """What to put in a ``uint8[]`` field: a flat uint8 view of ``arr``'s
    memory (copied only if it is not contiguous)."""
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def _set_bytes(msg: Any, arr: np.ndarray) -> None:
    flat = _as_bytes_field(arr)
    try:
        msg.data = flat
    except AssertionError:  # rclpy's classes take array.array, not numpy
        import array

        msg.data = array.array("B", flat.tobytes())


# -- Image ---------------------------------------------------------------------------

_NAMED = {
    "rgb8": ("u1", 3), "rgba8": ("u1", 4), "rgb16": ("u2", 3), "rgba16": ("u2", 4),
    "bgr8": ("u1", 3), "bgra8": ("u1", 4), "bgr16": ("u2", 3), "bgra16": ("u2", 4),
    "mono8": ("u1", 1), "mono16": ("u2", 1),
    "yuv422": ("u1", 2), "uyvy": ("u1", 2), "yuv422_yuy2": ("u1", 2), "yuyv": ("u1", 2),
}  # fmt: skip
_BAYER = re.compile(r"^bayer_(rggb|bggr|gbrg|grbg)(8|16)$")
_GENERIC = re.compile(r"^(8|16|32|64)(U|S|F)C([1-9]\d*)$")
_PLANAR = {"nv21": 1.5, "nv24": 3.0}  # rows of width bytes, per image row


def encoding_dtype(encoding: str) -> tuple[np.dtype[Any], int]:
    """(element dtype, channels) of a ``sensor_msgs/image_encodings`` name."""
    enc = encoding.lower()
    if enc in _NAMED:
        base, channels = _NAMED[enc]
        return np.dtype(base), channels
    m = _BAYER.match(enc)
    if m:
        return np.dtype("u1" if m.group(2) == "8" else "u2"), 1
    m = _GENERIC.match(encoding.upper()) or _GENERIC.match(encoding.upper().removeprefix("TYPE_"))
    if m:
        bits, kind, channels = int(m.group(1)), m.group(2), int(m.group(3))
        if f"{bits}{kind}" not in ("8U", "8S", "16U", "16S", "32S", "32F", "64F"):
            raise ValueError(f"image encoding {encoding!r}: ROS has no {bits}{kind} elements")
        code = {"U": "u", "S": "i", "F": "f"}[kind]
        return np.dtype(f"{code}{bits // 8}"), channels
    if enc in _PLANAR:
        return np.dtype("u1"), 1
    raise ValueError(f"unknown image encoding {encoding!r} (see sensor_msgs/image_encodings)")


def _image_to_array(msg: Any) -> np.ndarray:
    dtype, channels = encoding_dtype(msg.encoding)
    if msg.is_bigendian:
        dtype = dtype.newbyteorder(">")
    rows = int(msg.height * _PLANAR.get(msg.encoding.lower(), 1))
    width, step = int(msg.width), int(msg.step)
    buf = _bytes_view(msg.data)
    need = step * (rows - 1) + width * channels * dtype.itemsize if rows else 0
    if buf.size < need:
        raise ValueError(f"Image: {buf.size} bytes of data, {need} needed for {rows} rows of "
                         f"{width} x {channels} {dtype} (step {step})")  # fmt: skip
    shape: tuple[int, ...] = (rows, width, channels) if channels > 1 else (rows, width)
    strides: tuple[int, ...] = (step, channels * dtype.itemsize, dtype.itemsize)[: len(shape)]
    return np.ndarray(shape, dtype, buffer=buf, strides=strides)


def _array_to_image(kind: Any, arr: np.ndarray, encoding: str | None = None, **fields: Any) -> Any:
    if encoding is None:
        encoding = _default_encoding(arr)
    dtype, channels = encoding_dtype(encoding)
    rows_per = _PLANAR.get(encoding.lower(), 1)
    want = (arr.shape[2] if arr.ndim == 3 else 1) if arr.ndim in (2, 3) else None
    if want != channels or arr.dtype.newbyteorder("=") != dtype.newbyteorder("="):
        shape = "(rows, cols)" if channels == 1 else f"(rows, cols, {channels})"
        raise ValueError(f"Image {encoding!r} takes {shape} {dtype}, got {arr.shape} {arr.dtype}")
    msg = _new(kind, "sensor_msgs/msg/Image")
    msg.height, msg.width = int(arr.shape[0] / rows_per), int(arr.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = int(arr.dtype.byteorder == ">" or
                           (arr.dtype.byteorder == "=" and np.little_endian is False))  # fmt: skip
    msg.step = int(arr.shape[1] * channels * arr.dtype.itemsize)
    _set_bytes(msg, arr)
    _apply(msg, fields)
    return msg


def _default_encoding(arr: np.ndarray) -> str:
    channels = arr.shape[2] if arr.ndim == 3 else 1
    if arr.dtype == np.uint8 and channels in (1, 3, 4):
        return {1: "mono8", 3: "rgb8", 4: "rgba8"}[channels]
    if arr.dtype == np.uint16 and channels == 1:
        return "mono16"
    code = {"u": "U", "i": "S", "f": "F"}[arr.dtype.kind]
    return f"{arr.dtype.itemsize * 8}{code}C{channels}"


# -- CompressedImage -------------------------------------------------------------------


def _compressed_to_array(msg: Any) -> np.ndarray:
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(_bytes_view(msg.data).tobytes())) as img:
        return np.asarray(img)


def _array_to_compressed(kind: Any, arr: np.ndarray, format: str = "jpeg", **fields: Any) -> Any:
    from PIL import Image as PILImage

    fmt = format.lower()
    if fmt not in ("jpeg", "png"):
        raise ValueError(f"CompressedImage: format must be jpeg or png, got {format!r}")
    out = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(arr)).save(
        out, format="JPEG" if fmt == "jpeg" else "PNG"
    )
    msg = _new(kind, "sensor_msgs/msg/CompressedImage")
    msg.format = fmt
    _set_bytes(msg, np.frombuffer(out.getbuffer(), np.uint8))
    _apply(msg, fields)
    return msg


# -- PointCloud2 -----------------------------------------------------------------------

_PF_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
_PF_CODES = {np.dtype(v).str[1:]: k for k, v in _PF_TYPES.items()}


def cloud_dtype(fields: Any, point_step: int, bigendian: bool = False) -> np.dtype[Any]:
    """The structured dtype of a cloud's ``fields`` (offsets and padding kept)."""
    names, formats, offsets = [], [], []
    for f in fields:
        base = np.dtype(_PF_TYPES[int(f.datatype)]).newbyteorder(">" if bigendian else "<")
        names.append(f.name)
        formats.append(base if int(f.count) == 1 else (base, (int(f.count),)))
        offsets.append(int(f.offset))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": int(point_step)})  # fmt: skip


def _cloud_to_array(msg: Any) -> np.ndarray:
    dtype = cloud_dtype(msg.fields, msg.point_step, bool(msg.is_bigendian))
    buf = _bytes_view(msg.data)
    h, w = int(msg.height), int(msg.width)
    need = int(msg.row_step) * (h - 1) + w * int(msg.point_step) if h else 0
    if buf.size < need:
        raise ValueError(f"PointCloud2: {buf.size} bytes of data, {need} needed")
    arr = np.ndarray((h, w), dtype, buffer=buf, strides=(int(msg.row_step), int(msg.point_step)))
    return arr[0] if h == 1 else arr


def _array_to_cloud(kind: Any, arr: np.ndarray, **fields: Any) -> Any:
    if arr.dtype.names is None:
        raise ValueError("PointCloud2 takes a structured array (fields x, y, z, ...)")
    msg = _new(kind, "sensor_msgs/msg/PointCloud2")
    out = []
    for name in arr.dtype.names:
        sub, offset = arr.dtype.fields[name][:2]
        base = sub.base if sub.shape else sub
        pf = _new(msg, "sensor_msgs/msg/PointField")
        pf.name, pf.offset = name, int(offset)
        pf.datatype = int(_PF_CODES[base.str[1:]])
        pf.count = int(np.prod(sub.shape)) if sub.shape else 1
        out.append(pf)
    msg.fields = out
    two_d = arr.reshape(1, -1) if arr.ndim == 1 else arr
    msg.height, msg.width = int(two_d.shape[0]), int(two_d.shape[1])
    msg.point_step = int(arr.dtype.itemsize)
    msg.row_step = int(arr.dtype.itemsize * msg.width)
    msg.is_bigendian = any(arr.dtype.fields[n][0].base.byteorder == ">" for n in arr.dtype.names)
    xyz_names = [n for n in ("x", "y", "z") if n in arr.dtype.names]
    msg.is_dense = bool(all(np.isfinite(arr[n]).all() for n in xyz_names
                            if arr.dtype.fields[n][0].kind == "f"))  # fmt: skip
    _set_bytes(msg, two_d)
    _apply(msg, fields)
    return msg


def xyz(cloud: np.ndarray, remove_nans: bool = True) -> np.ndarray:
    """(N, 3) float64 points of a cloud array (``numpify`` of a PointCloud2)."""
    flat = cloud.reshape(-1)
    pts = np.stack([flat["x"], flat["y"], flat["z"]], axis=-1).astype(np.float64)
    return pts[np.isfinite(pts).all(axis=1)] if remove_nans else pts


def split_rgb(cloud: np.ndarray, field: str = "rgb") -> np.ndarray:
    """The packed ``rgb`` float32 field (PCL's layout) as uint8 ``r``, ``g``, ``b``
    fields, in a new structured array beside the other fields."""
    packed = np.ascontiguousarray(cloud[field]).view(np.uint32)
    rest = [n for n in cloud.dtype.names if n != field]
    out = np.empty(cloud.shape, [*((n, cloud.dtype[n]) for n in rest),
                                 ("r", "u1"), ("g", "u1"), ("b", "u1")])  # fmt: skip
    for n in rest:
        out[n] = cloud[n]
    out["r"], out["g"], out["b"] = (packed >> 16) & 255, (packed >> 8) & 255, packed & 255
    return out


def merge_rgb(cloud: np.ndarray, field: str = "rgb") -> np.ndarray:
    """Inverse of :func:`split_rgb`: ``r``, ``g``, ``b`` into one packed float32."""
    rest = [n for n in cloud.dtype.names if n not in ("r", "g", "b")]
    out = np.empty(cloud.shape, [*((n, cloud.dtype[n]) for n in rest), (field, "f4")])
    for n in rest:
        out[n] = cloud[n]
    packed = (cloud["r"].astype(np.uint32) << 16) | (cloud["g"].astype(np.uint32) << 8) | \
        cloud["b"].astype(np.uint32)  # fmt: skip
    out[field] = packed.view(np.float32)
    return out


# -- geometry ---------------------------------------------------------------------------


def _quat_to_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip


def _matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix (Shepperd's method: stable for all angles)."""
    t = np.trace(m)
    if t > 0:
        s = 2.0 * np.sqrt(t + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, (m[k, j] - m[j, k]) / s]
        q[i], q[j], q[k] = 0.25 * s, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
    return np.array(q)


def _vec(v: Any) -> np.ndarray:
    return np.array([v.x, v.y, v.z], dtype=np.float64)


def _quat(q: Any) -> np.ndarray:
    return np.array([q.x, q.y, q.z, q.w], dtype=np.float64)


def _set_vec(target: Any, values: Any, names: str = "xyz") -> Any:
    for n, v in zip(names, values, strict=True):
        setattr(target, n, float(v))
    return target


def _pose_matrix(position: Any, orientation: Any) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = _quat_to_matrix(_quat(orientation))
    m[:3, 3] = _vec(position)
    return m


def _check_matrix(arr: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(arr, dtype=np.float64)
    if arr.shape != (4, 4):
        raise ValueError(f"{what} takes a 4x4 homogeneous matrix, got shape {arr.shape}")
    return arr


def _matrix_to_pose(kind: Any, arr: np.ndarray, **fields: Any) -> Any:
    m = _check_matrix(arr, "Pose")
    msg = _new(kind, "geometry_msgs/msg/Pose")
    _set_vec(msg.position, m[:3, 3])
    _set_vec(msg.orientation, _matrix_to_quat(m[:3, :3]), "xyzw")
    return _apply(msg, fields)


def _matrix_to_transform(kind: Any, arr: np.ndarray, **fields: Any) -> Any:
    m = _check_matrix(arr, "Transform")
    msg = _new(kind, "geometry_msgs/msg/Transform")
    _set_vec(msg.translation, m[:3, 3])
    _set_vec(msg.rotation, _matrix_to_quat(m[:3, :3]), "xyzw")
    return _apply(msg, fields)


def _array_to_twist(kind: Any, arr: np.ndarray, **fields: Any) -> Any:
    a = np.asarray(arr, dtype=np.float64).reshape(-1)
    if a.shape != (6,):
        raise ValueError(f"Twist takes 6 values (linear xyz, angular xyz), got {a.shape}")
    msg = _new(kind, "geometry_msgs/msg/Twist")
    _set_vec(msg.linear, a[:3])
    _set_vec(msg.angular, a[3:])
    return _apply(msg, fields)


def _array_to_vector(ros_type: str) -> Any:
    def make(kind: Any, arr: np.ndarray, **fields: Any) -> Any:
        names = "xyzw" if ros_type.endswith("Quaternion") else "xyz"
        a = np.asarray(arr, dtype=np.float64).reshape(-1)
        if a.shape != (len(names),):
            raise ValueError(f"{ros_type} takes {len(names)} values, got {a.shape}")
        return _apply(_set_vec(_new(kind, ros_type), a, names), fields)

    return make


# -- LaserScan, Imu, Odometry, CameraInfo, OccupancyGrid --------------------------------


def _float32_view(values: Any) -> np.ndarray:
    return values if isinstance(values, np.ndarray) else np.frombuffer(values, np.float32)


def _scan_to_array(msg: Any) -> np.ndarray:
    return _float32_view(msg.ranges)


def _array_to_scan(kind: Any, ranges: np.ndarray, **fields: Any) -> Any:
    r = np.asarray(ranges, dtype=np.float32).reshape(-1)
    msg = _new(kind, "sensor_msgs/msg/LaserScan")
    _set_float_seq(msg, "ranges", r)
    if "angle_min" in fields and "angle_max" in fields and "angle_increment" not in fields:
        n = max(r.size - 1, 1)
        fields["angle_increment"] = (fields["angle_max"] - fields["angle_min"]) / n
    if "intensities" in fields:
        _set_float_seq(msg, "intensities", np.asarray(fields.pop("intensities"), np.float32))
    return _apply(msg, fields)


def _set_float_seq(msg: Any, name: str, values: np.ndarray) -> None:
    try:
        setattr(msg, name, values)
    except AssertionError:  # rclpy: array.array('f')
        import array

        setattr(msg, name, array.array("f", values.tobytes()))


def _imu_to_dict(msg: Any) -> dict[str, np.ndarray]:
    return {
        "orientation": _quat(msg.orientation),
        "angular_velocity": _vec(msg.angular_velocity),
        "linear_acceleration": _vec(msg.linear_acceleration),
        "orientation_covariance": np.asarray(msg.orientation_covariance).reshape(3, 3),
        "angular_velocity_covariance": np.asarray(msg.angular_velocity_covariance).reshape(3, 3),
        "linear_acceleration_covariance": np.asarray(msg.linear_acceleration_covariance).reshape(
            3, 3
        ),
    }


def _camera_info_to_dict(msg: Any) -> dict[str, Any]:
    return {
        "width": int(msg.width), "height": int(msg.height),
        "distortion_model": msg.distortion_model,
        "K": np.asarray(msg.k, dtype=np.float64).reshape(3, 3),
        "D": np.asarray(msg.d, dtype=np.float64),
        "R": np.asarray(msg.r, dtype=np.float64).reshape(3, 3),
        "P": np.asarray(msg.p, dtype=np.float64).reshape(3, 4),
    }  # fmt: skip


def _dict_to_camera_info(kind: Any, info: dict[str, Any], **fields: Any) -> Any:
    msg = _new(kind, "sensor_msgs/msg/CameraInfo")
    msg.width, msg.height = int(info["width"]), int(info["height"])
    msg.distortion_model = info.get("distortion_model", "plumb_bob")
    msg.k = [float(v) for v in np.asarray(info["K"], np.float64).reshape(9)]
    msg.d = [float(v) for v in np.asarray(info.get("D", []), np.float64).reshape(-1)]
    msg.r = [float(v) for v in np.asarray(info.get("R", np.eye(3)), np.float64).reshape(9)]
    msg.p = [float(v) for v in np.asarray(info["P"], np.float64).reshape(12)]
    return _apply(msg, fields)


def _grid_to_array(msg: Any) -> np.ma.MaskedArray:
    data = msg.data if isinstance(msg.data, np.ndarray) else np.frombuffer(msg.data, np.int8)
    grid = data.view(np.int8).reshape(int(msg.info.height), int(msg.info.width))
    return np.ma.masked_array(grid, mask=grid == -1)


def _array_to_grid(kind: Any, arr: Any, **fields: Any) -> Any:
    grid = np.ma.filled(np.ma.asarray(arr).astype(np.int8), -1)
    if grid.ndim != 2:
        raise ValueError(f"OccupancyGrid takes a 2-D int8 array, got shape {grid.shape}")
    msg = _new(kind, "nav_msgs/msg/OccupancyGrid")
    msg.info.height, msg.info.width = (int(n) for n in grid.shape)
    flat = np.ascontiguousarray(grid).reshape(-1)
    try:
        msg.data = flat
    except AssertionError:  # rclpy: array.array('b')
        import array

        msg.data = array.array("b", flat.tobytes())
    return _apply(msg, fields)


def _apply(msg: Any, fields: dict[str, Any]) -> Any:
    """Keyword fields given to msgify (``header=``, ``frame_id=`` for the header)."""
    frame_id = fields.pop("frame_id", None)
    if frame_id is not None:
        msg.header.frame_id = frame_id
    for name, value in fields.items():
        if not hasattr(msg, name):
            raise ValueError(f"{_type_of(msg)} has no field {name!r}")
        setattr(msg, name, value)
    return msg


# -- dispatch ---------------------------------------------------------------------------

_TO_ARRAY = {
    "sensor_msgs/msg/Image": _image_to_array,
    "sensor_msgs/msg/CompressedImage": _compressed_to_array,
    "sensor_msgs/msg/PointCloud2": _cloud_to_array,
    "sensor_msgs/msg/LaserScan": _scan_to_array,
    "sensor_msgs/msg/Imu": _imu_to_dict,
    "sensor_msgs/msg/CameraInfo": _camera_info_to_dict,
    "nav_msgs/msg/OccupancyGrid": _grid_to_array,
    "nav_msgs/msg/Odometry": lambda m: _pose_matrix(m.pose.pose.position, m.pose.pose.orientation),
    "geometry_msgs/msg/Pose": lambda m: _pose_matrix(m.position, m.orientation),
    "geometry_msgs/msg/PoseStamped": lambda m: _pose_matrix(m.pose.position, m.pose.orientation),
    "geometry_msgs/msg/Transform": lambda m: _pose_matrix(m.translation, m.rotation),
    "geometry_msgs/msg/TransformStamped": lambda m: _pose_matrix(
        m.transform.translation, m.transform.rotation
    ),
    "geometry_msgs/msg/Twist": lambda m: np.concatenate([_vec(m.linear), _vec(m.angular)]),
    "geometry_msgs/msg/Point": _vec,
    "geometry_msgs/msg/Vector3": _vec,
    "geometry_msgs/msg/Quaternion": _quat,
}
_FROM_ARRAY = {
    "sensor_msgs/msg/Image": _array_to_image,
    "sensor_msgs/msg/CompressedImage": _array_to_compressed,
    "sensor_msgs/msg/PointCloud2": _array_to_cloud,
    "sensor_msgs/msg/LaserScan": _array_to_scan,
    "sensor_msgs/msg/CameraInfo": _dict_to_camera_info,
    "nav_msgs/msg/OccupancyGrid": _array_to_grid,
    "geometry_msgs/msg/Pose": _matrix_to_pose,
    "geometry_msgs/msg/Transform": _matrix_to_transform,
    "geometry_msgs/msg/Twist": _array_to_twist,
    "geometry_msgs/msg/Point": _array_to_vector("geometry_msgs/msg/Point"),
    "geometry_msgs/msg/Vector3": _array_to_vector("geometry_msgs/msg/Vector3"),
    "geometry_msgs/msg/Quaternion": _array_to_vector("geometry_msgs/msg/Quaternion"),
}


def numpify(msg: Any) -> Any:
    """The message as numpy: a view of its buffer for images, clouds, scans
    and grids; a 4x4 matrix for poses and transforms (Odometry: its pose);
    arrays in a dict for Imu and CameraInfo."""
    ros_type = _type_of(msg)
    try:
        convert = _TO_ARRAY[ros_type]
    except KeyError:
        raise ValueError(f"numpify: no conversion for {ros_type} "
                         f"(known: {', '.join(sorted(_TO_ARRAY))})") from None  # fmt: skip
    return convert(msg)


def msgify(msg_type: Any, array: Any, *args: Any, **fields: Any) -> Any:
    """A message of ``msg_type`` (a type name, or a class: rclpy's, HPRM's,
    rosbags') from ``array``; extra arguments per type (an Image's
    ``encoding``, a CompressedImage's ``format``, a LaserScan's angles) and
    any plain field by keyword (``frame_id=`` sets the header's)."""
    ros_type = _type_of(msg_type)
    try:
        convert = _FROM_ARRAY[ros_type]
    except KeyError:
        raise ValueError(f"msgify: no conversion to {ros_type} "
                         f"(known: {', '.join(sorted(_FROM_ARRAY))})") from None  # fmt: skip
    return convert(msg_type, array, *args, **fields)
