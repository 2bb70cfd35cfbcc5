"""hprm_bridge's benchmarks (``hprm bench NAME``), one module each:
``ros2-wire`` (:mod:`.wire`) and ``ported-pipeline`` (:mod:`.ported_pipeline`)."""
