"""netcl_lite: tokens and attention, executable.

A small tensor library whose compute runs as OpenCL kernels (``kernels/*.cl``)
through PyOpenCL. The default device is the PoCL CPU driver that ``pip``
installs, so every example runs on a laptop without a GPU.
"""

__version__ = "0.1.0"
