# The CARLA PPO+YOLO demo's A/B comparison (src/carla_demo) on ROS 2 Humble: one image runs
# every variant (plain ROS 2, ROS 2 + shared memory, HPRM centralized/decentralized, the
# inference floor); the variant is an argument, not an image (docker/README.md).
#   docker build -f docker/carla_demo.Dockerfile -t hprm-carla .
#   docker run --rm --ipc=host -v $PWD/results:/results hprm-carla            # embedded world
#   docker compose -f docker/compose.carla.yaml up --build --abort-on-container-exit   # CARLA
# GPU inference: --build-arg ORT_PACKAGE="onnxruntime-gpu[cuda,cudnn]==1.23.2" (CUDA 12 and
# cuDNN 9 come as pip wheels, found through LD_LIBRARY_PATH below) and run with --gpus all;
# without a GPU onnxruntime-gpu falls back to the CPU.
FROM ros:humble
# Humble's Python is 3.10: onnxruntime 1.23.2 is the newest release with 3.10 wheels (the
# demo's ONNX graph is opset 17 / IR 8, loadable by any onnxruntime >= 1.11); setup.py pins
# 1.32.0 for the 3.11+ virtual environment.
ARG ORT_PACKAGE=onnxruntime==1.23.2
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3-pip python3-numpy python3-msgpack python3-yaml python3-pil \
        build-essential python3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /ws
# PyPI dependencies: the workspace's (requirements.txt), the demo's extras `inference` and
# `embedded-world` (pinned as in src/carla_demo/setup.py but for onnxruntime, above) and
# `carla` (the 0.9.15 client has a cp310 wheel), matplotlib for the box plot. numpy<2:
# Humble's compiled Python extensions (rclpy's message support) are built against numpy 1.x.
# The hprm packages and carla_demo themselves are installed by colcon, below.
COPY requirements.txt /ws/src/hprm/requirements.txt
RUN pip3 install --no-cache-dir -r /ws/src/hprm/requirements.txt "numpy<2" "${ORT_PACKAGE}" \
        onnx==1.23.2 highway-env==1.12.1 carla==0.9.15 matplotlib
COPY . /ws/src/hprm
# Every package of the workspace: hprm_msgs, hprm_core (the `hprm` command), hprm_bridge,
# carla_demo.
RUN . /opt/ros/humble/setup.sh \
    && colcon build \
    && echo ". /ws/install/setup.bash" >> /etc/bash.bashrc
# ament_python installs console scripts under lib/<package> (hprm: hprm_core's).
ENV PATH=/ws/install/hprm_core/lib/hprm_core:/ws/install/hprm_bridge/lib/hprm_bridge:$PATH
# onnxruntime-gpu[cuda,cudnn]'s CUDA libraries (absent directories are harmless).
ENV LD_LIBRARY_PATH=/usr/local/lib/python3.10/dist-packages/nvidia/cuda_runtime/lib:/usr/local/lib/python3.10/dist-packages/nvidia/cublas/lib:/usr/local/lib/python3.10/dist-packages/nvidia/cudnn/lib:/usr/local/lib/python3.10/dist-packages/nvidia/cufft/lib:/usr/local/lib/python3.10/dist-packages/nvidia/curand/lib:/usr/local/lib/python3.10/dist-packages/nvidia/cuda_nvrtc/lib
# Sources /opt/ros/humble/setup.bash and /ws/install/setup.bash, then runs the command.
COPY docker/carla_demo_entrypoint.sh /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
CMD ["hprm", "bench", "carla-ab", "--json", "/results/carla_ab.json", "--plot", "/results/carla_ab.png"]
