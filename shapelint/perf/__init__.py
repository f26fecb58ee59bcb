"""The hardware and the performance model: GPU table, GEMM timing, step workload, estimates.

Import the submodules directly (``shapelint.hardware.gpus``, ``.gemm``, ``.workload``,
``.estimate``, ``.explain``, ``.plot``); this package imports nothing so that loading the GPU
table does not pull in the model.
"""
