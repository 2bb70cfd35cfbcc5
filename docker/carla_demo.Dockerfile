# The CARLA PPO+YOLO demo's A/B comparison (src/carla_demo) on ROS 2 Humble: one image runs
# every variant (plain ROS 2, ROS 2 + shared memory, HPRM centralized/decentralized, the
# inference floor); the variant is an argument, not an image.
#   docker build -f docker/carla_demo.Dockerfile -t hprm-carla .
#   docker run --rm --ipc=host -v $PWD/results:/results hprm-carla            # embedded world
#   docker compose -f docker/compose.carla.yaml up --build --abort-on-container-exit   # CARLA
# GPU inference: --build-arg ORT_PACKAGE=onnxruntime-gpu==1.32.0 and run with --gpus all.
FROM ros:humble
ARG ORT_PACKAGE=onnxruntime==1.32.0
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3-pip python3-numpy python3-msgpack python3-yaml python3-pil \
        build-essential python3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /ws
# PyPI dependencies: the workspace's (requirements.txt), the demo's inference stack and
# embedded world (pinned as in src/carla_demo/setup.py), the CARLA client (a wheel for
# Python 3.10 exists for 0.9.15), and matplotlib for the box plot.
COPY requirements.txt /ws/src/hprm/requirements.txt
RUN pip3 install --no-cache-dir -r /ws/src/hprm/requirements.txt "${ORT_PACKAGE}" \
        onnx==1.23.2 highway-env==1.12.1 carla==0.9.15 matplotlib
COPY . /ws/src/hprm
RUN . /opt/ros/humble/setup.sh \
    && colcon build --packages-up-to carla_demo \
    && echo ". /ws/install/setup.bash" >> /etc/bash.bashrc
# ament_python installs console scripts under lib/<package> (hprm: hprm_core's).
ENV PATH=/ws/install/hprm_core/lib/hprm_core:/ws/install/hprm_bridge/lib/hprm_bridge:$PATH
COPY docker/carla_demo_entrypoint.sh /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
CMD ["hprm", "bench", "carla-ab", "--json", "/results/carla_ab.json", "--plot", "/results/carla_ab.png"]
