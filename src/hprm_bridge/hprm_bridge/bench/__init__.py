"""hprm_bridge's benchmarks (``hprm bench NAME``), one module each:
``ros2-wire`` (:mod:`.wire`), ``ported-pipeline`` (:mod:`.ported_pipeline`) and
``bridge`` (:mod:`.bridge`)."""
